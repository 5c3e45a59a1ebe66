"""fleet: the pure core of a declarative GitOps reconciler for LLM inference fleets.

Nothing in this package touches the network, a process or a host: it holds the spec
models, the fact parsers, the diff and plan, and the renderers. The `reconciler`
package is the shell that does I/O and calls into this one.
"""

__version__ = "0.1.0"
