"""Single sign-on (issue 20): Feishu/Lark and OpenID Connect through django-allauth.

``providers`` reads the deployment's providers from the environment (for settings), ``feishu`` is
allauth's Feishu provider pointed at a configurable Feishu or Lark origin, ``identity`` turns a social
login into what the organisation rules look at, ``rules`` decides which organisations an identity joins
and whether a user may still sign in with a password, ``approval`` is the operator's approval of a
rule's claim (issue 31), and ``adapter`` is where allauth asks.
"""
