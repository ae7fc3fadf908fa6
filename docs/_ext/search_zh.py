"""The Chinese build's search: Sphinx's Chinese language with a stemmer its script can find.

Sphinx 9.0's Chinese search language segments Chinese with jieba and stems Latin words with the English
stemmer, but its ``language_data.js`` ends with ``window.Stemmer = ChineseStemmer``, a name nothing
defines, so the search page fails before it searches. The script names the stemmer after
``language_name``; this subclass names it English, which is the stemmer the index was built with.
"""

from __future__ import annotations

from typing import Any

from sphinx.search.zh import SearchChinese


class SearchChineseWithEnglishStemmer(SearchChinese):
    """Sphinx's Chinese search, its script's stemmer named for the code it ships (English's)."""

    language_name = "English"


def setup(app: Any) -> dict[str, Any]:
    app.add_search_language(SearchChineseWithEnglishStemmer)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
