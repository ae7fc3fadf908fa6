"""The Feishu (Lark) wire layer for approval cards: client, card builders and callback parsing.

Django-free; see /work/shared/FEISHU.md for the protocol facts these modules implement.
"""
