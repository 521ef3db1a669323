"""The job: its keys (:mod:`.settings`), the typed :class:`Job` a run reads (:mod:`.spec`), and
job files read, merged and validated into one (:mod:`.files`)."""

from .files import display_path, load_job, parse_override
from .settings import SETTINGS, settings_table
from .spec import Job

__all__ = ["SETTINGS", "Job", "display_path", "load_job", "parse_override", "settings_table"]
