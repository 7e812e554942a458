"""The live picture of a cluster: `tinykube up --ui-port` (server.py), its model (state.py), a Service's details
(details.py) and a node's rules (rules.py); the page itself is static/ (plain HTML, JS and SVG: no build step)."""
