"""The command line: the parser, one module per command family registering its own parser and handler,
and the text presenters. The one place that reads the process environment."""
