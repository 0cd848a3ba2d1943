"""Running threads from Python and the terminal: run and resume, live progress, export."""
