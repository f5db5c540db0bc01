"""memhint's bundled profiling harness: runs a user's training step in this process and reports memory
per source line over a JSON-lines protocol (see protocol.py). Started by src/profiler/launcher.ts."""

HARNESS_VERSION = "0.1.0"
PROTOCOL_VERSION = 1
