"""Maintenance: garbage collection, history expiry, integrity checks and export."""

from zarrlake.maintenance.expire import expire
from zarrlake.maintenance.export import export
from zarrlake.maintenance.fsck import fsck
from zarrlake.maintenance.gc import gc
from zarrlake.maintenance.reports import ExpireReport, ExportReport, FsckIssue, FsckReport, GCReport

__all__ = [
    "ExpireReport",
    "ExportReport",
    "FsckIssue",
    "FsckReport",
    "GCReport",
    "expire",
    "export",
    "fsck",
    "gc",
]
