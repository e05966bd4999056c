"""benchreg runners: the bundled training and inference benchmarks, environment capture and the CLI.

Plain Python: imports protocol/ and never django or registry/. Every document a runner produces has
passed `protocol.check` before it leaves this package.
"""

__version__ = "0.1.0"
