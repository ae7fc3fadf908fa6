"""allauth's Feishu provider with a configurable origin: Feishu (open.feishu.cn), Lark
(open.larksuite.com) or, in the tests, the local fake. allauth's own class names open.feishu.cn in
every URL; this one takes the origin from ``SOCIALACCOUNT_PROVIDERS["feishu"]["BASE_URL"]``."""
