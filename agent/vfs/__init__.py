"""The virtual filesystem the steps write into: file entries and their summaries
(:mod:`agent.vfs.entries`), file names a reader cannot mistake (:mod:`agent.vfs.filenames`),
artifact text rendered as data (:mod:`agent.vfs.quoting`) and the user's files: the rules
they must meet (:mod:`agent.vfs.user_files`), reading them from the host disk
(:mod:`agent.vfs.host_disk`) and keeping them in the thread (:mod:`agent.vfs.origin`)."""

from agent.vfs.entries import summarize_files

__all__ = ["summarize_files"]
