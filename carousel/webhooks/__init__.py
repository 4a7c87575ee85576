"""Webhooks: a client names a URL on a request and is told when the request is done (docs/api.md).

Registration (carousel.webhooks.register) checks the URL against the operators' allow-list; the outbox row
is written in the transaction that makes the request DONE (carousel.db.webhook_queries); the deliverer
(carousel.webhooks.deliverer) posts it later, outside any transaction, retrying with backoff.
"""
