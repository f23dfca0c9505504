"""Monte-Carlo (rank 3): sampling an expression (:mod:`.sample`), statistics (:mod:`.stats`)
and the check of a law against samples (:mod:`.check`).

Imports only ``expr/`` and ranks 0-1; a law is taken by duck type.
"""
