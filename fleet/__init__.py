"""fleet: the pure core of a declarative GitOps reconciler for LLM inference fleets.

Nothing in this package touches the network, a process or a host: it holds the spec
models, the fact parsers, the diff and plan, and the renderers. The `reconciler`
package is the shell that does I/O and calls into this one.
"""

# The one place the version is written: pyproject.toml reads it (setuptools' dynamic
# version), `fleet version` prints it, and tests/unit/test_packaging.py holds the pinned
# installs in examples/ and deploy/ to it.
__version__ = "0.1.0"
