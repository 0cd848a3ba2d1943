"""The virtual filesystem the steps write into: file entries and their summaries
(:mod:`agent.vfs.entries`), file names a reader cannot mistake (:mod:`agent.vfs.filenames`),
artifact text rendered as data (:mod:`agent.vfs.quoting`) and the user's files
(:mod:`agent.vfs.user_files`)."""

from agent.vfs.entries import summarize_files

__all__ = ["summarize_files"]
