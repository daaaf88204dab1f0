"""Bridges to compilers outside tinyspec, held to tinyspec's spec. Each is optional and pinned: `tinygrad/` needs the
`tinygrad` extra (`pip install tinyspec[tinygrad]`). Nothing in tinyspec's core imports a bridge; only the CLI does,
lazily, when its verb runs."""
