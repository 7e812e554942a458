"""The HTTP edge of the apiserver: what happens to a request before a handler knows which resource it is for.

Limits applied before work (`limits`), request decoding and response encoding (`negotiation`), what a method and
path ask for (`requestinfo`), the uvicorn protocols that upgrade a connection to a WebSocket or hand a raw (SPDY)
upgrade over (`upgrade`, `rawupgrade`) and that put the TLS client certificate where the application sees it
(`peercert`). Nothing here reads the store or knows a kind.
"""
