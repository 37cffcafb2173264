"""The catalog schema (SQLAlchemy Core) at the current version; :mod:`.migrations` upgrades
older catalogs to it.

Every table is prefixed ``zl_`` so a catalog can share a database with other applications.
"""

from __future__ import annotations

import sqlalchemy as sa

from zarrlake.model.hashing import SHA256
from zarrlake.model.virtual import SHA256_IDENTITY

__all__ = ["SCHEMA_VERSION", "metadata", "tune_storage"]

SCHEMA_VERSION = 11

metadata = sa.MetaData()

Hash = sa.LargeBinary(32)
Id = sa.String(48)
Name = sa.String(128)

info = sa.Table(
    "zl_info",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

repos = sa.Table(
    "zl_repos",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", Name, nullable=False, unique=True),
    sa.Column("storage", sa.Text, nullable=False),
    sa.Column("config", sa.Text, nullable=False, server_default="{}"),
    sa.Column("created_at", sa.Float, nullable=False),
    # the function naming its chunk objects (zarrlake.model.hashing); repos made before
    # schema 9 are SHA-256
    sa.Column("content_hash", sa.String(16), nullable=False, server_default=SHA256),
    # the function naming its virtual chunks (zarrlake.model.virtual); repos made before
    # schema 11 are SHA-256
    sa.Column("virtual_identity", sa.String(16), nullable=False, server_default=SHA256_IDENTITY),
)

# Immutable, content-addressed catalog nodes: snapshot roots, manifest indexes and shards,
# metadata documents and change sets. Shared by every commit that did not change them.
blobs = sa.Table(
    "zl_blobs",
    metadata,
    sa.Column("repo_id", sa.Integer, primary_key=True),
    sa.Column("hash", Hash, primary_key=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("data", sa.LargeBinary, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)

commits = sa.Table(
    "zl_commits",
    metadata,
    sa.Column("repo_id", sa.Integer, primary_key=True),
    sa.Column("id", Id, primary_key=True),
    sa.Column("parent_id", Id, nullable=True),
    sa.Column("merge_parent_id", Id, nullable=True),
    sa.Column("root_hash", Hash, nullable=False),
    sa.Column("changes_hash", Hash, nullable=True),
    sa.Column("author", sa.Text, nullable=False),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("meta", sa.Text, nullable=False, server_default="{}"),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("generation", sa.Integer, nullable=False),
    sa.Index("zl_commits_parent", "repo_id", "parent_id"),
)

refs = sa.Table(
    "zl_refs",
    metadata,
    sa.Column("repo_id", sa.Integer, primary_key=True),
    sa.Column("name", Name, primary_key=True),
    sa.Column("kind", sa.String(8), nullable=False),  # "branch" | "tag"
    sa.Column("commit_id", Id, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
)

reflog = sa.Table(
    "zl_reflog",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("repo_id", sa.Integer, nullable=False),
    sa.Column("name", Name, nullable=False),
    sa.Column("action", sa.String(16), nullable=False),
    sa.Column("old_commit", Id, nullable=True),
    sa.Column("new_commit", Id, nullable=True),
    sa.Column("author", sa.Text, nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Column("message", sa.Text, nullable=False, server_default=""),
    sa.Index("zl_reflog_ref", "repo_id", "name", "id"),
)

sessions = sa.Table(
    "zl_sessions",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("repo_id", sa.Integer, nullable=False),
    sa.Column("branch", Name, nullable=False),
    sa.Column("base_commit", Id, nullable=False),
    sa.Column("author", sa.Text, nullable=False),
    sa.Column("isolation", sa.String(16), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),  # open | committed | abandoned
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Column("commit_id", Id, nullable=True),
    sa.Index("zl_sessions_repo", "repo_id", "status"),
)

# A session's writes. kind: "meta" (key "", hash of a metadata document), "drop" (key "", the
# base node is removed), "chunk" (key "1,2,3"), "raw" (key = store key). hash NULL with inline
# NULL is a tombstone. A packed chunk (version 4) names its pack and its offset in it; crc
# (version 5) is a stored chunk's CRC32C, which reads check. A virtual chunk (version 6) has
# its source record (JSON: URL, size, ETag or modification stamp) in source and its offset in
# that source in pack_offset; its hash is the reference's identity, not an object's name.
# Virtual references staged a shard at a time (version 10): "vrefs" (key = the shard position
# "1,2,3", the shard's bytes in inline, the shard shape "4,5,6" in source) and "vshape" (key "",
# the shard shape of all the node's batches, in source).
staged = sa.Table(
    "zl_staged",
    metadata,
    sa.Column("session_id", Id, primary_key=True),
    sa.Column("path", sa.Text, primary_key=True),
    sa.Column("kind", sa.String(8), primary_key=True),
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("hash", Hash, nullable=True),
    sa.Column("length", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("inline", sa.LargeBinary, nullable=True),
    sa.Column("pack", Hash, nullable=True),
    sa.Column("pack_offset", sa.BigInteger, nullable=True),
    sa.Column("crc", sa.BigInteger, nullable=True),
    sa.Column("source", sa.Text, nullable=True),
)

# Where a repo's virtual chunk references may point (version 6): URL prefixes (normalized,
# ending with "/") and, per prefix, the options to read them with that are not secrets
# (endpoint, region, anonymous access...). Credentials are never stored here: they are given
# when the repo is opened (source_options=), like storage_options.
virtual_sources = sa.Table(
    "zl_virtual_sources",
    metadata,
    sa.Column("repo_id", sa.Integer, primary_key=True),
    sa.Column("prefix", sa.String(1024), primary_key=True),
    sa.Column("options", sa.Text, nullable=False, server_default="{}"),
    sa.Column("created_at", sa.Float, nullable=False),
)

# What a serializable session read: key "" is the node's metadata, else chunk coords "1,2".
reads = sa.Table(
    "zl_reads",
    metadata,
    sa.Column("session_id", Id, primary_key=True),
    sa.Column("path", sa.Text, primary_key=True),
    sa.Column("key", sa.Text, primary_key=True),
)

# Garbage collection's bookkeeping (version 2). kind: "object" (a chunk object) or "blob" (a
# zl_blobs row). state: "marked" (found unreachable at marked_at), "deleting" (claimed by gc run
# run_id, about to be deleted), "deleted" (an object gone since deleted_at: a commit of a session
# created before then that stages it is refused). See docs/history.md, "Garbage collection".
gc_marks = sa.Table(
    "zl_gc_marks",
    metadata,
    sa.Column("repo_id", sa.Integer, primary_key=True),
    sa.Column("kind", sa.String(8), primary_key=True),
    sa.Column("hash", Hash, primary_key=True),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("size", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("marked_at", sa.Float, nullable=False),
    sa.Column("run_id", Id, nullable=True),
    sa.Column("deleted_at", sa.Float, nullable=True),
    sa.Index("zl_gc_marks_state", "repo_id", "kind", "state"),
)


# A packed chunk gc moved out of a mostly dead pack (version 4): a read of (pack, pack_offset)
# that finds the pack gone follows the row to (new_pack, new_offset). gc deletes the rows of a
# pack once no ref names it. See docs/architecture.md, "Packs".
moved = sa.Table(
    "zl_moved",
    metadata,
    sa.Column("repo_id", sa.Integer, primary_key=True),
    sa.Column("pack", Hash, primary_key=True),
    sa.Column("pack_offset", sa.BigInteger, primary_key=True),
    sa.Column("new_pack", Hash, nullable=False),
    sa.Column("new_offset", sa.BigInteger, nullable=False),
)


# Idempotency keys of commits (version 3): a commit carrying a key already recorded on its branch
# returns the recorded commit instead of committing again (retried Spark jobs, stream batches).
commit_keys = sa.Table(
    "zl_commit_keys",
    metadata,
    sa.Column("repo_id", sa.Integer, primary_key=True),
    sa.Column("branch", Name, primary_key=True),
    sa.Column("key", sa.String(256), primary_key=True),
    sa.Column("commit_id", Id, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)


# A repo's rules (version 7): checks that gate commits and merges (spec: JSON of kind, params
# and timeout; events and branches: JSON lists), and protected branches.
checks = sa.Table(
    "zl_checks",
    metadata,
    sa.Column("repo_id", sa.Integer, primary_key=True),
    sa.Column("name", Name, primary_key=True),
    sa.Column("spec", sa.Text, nullable=False),
    sa.Column("events", sa.Text, nullable=False),
    sa.Column("branches", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)

branch_rules = sa.Table(
    "zl_branch_rules",
    metadata,
    sa.Column("repo_id", sa.Integer, primary_key=True),
    sa.Column("branch", Name, primary_key=True),
    sa.Column("required_checks", sa.Text, nullable=False, server_default="[]"),
    sa.Column("required_approvals", sa.Integer, nullable=False, server_default="0"),
    sa.Column("allow_direct", sa.Boolean, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)

# Pull requests (version 7), numbered per repo, and what happened on them (comments,
# approvals of a source commit, merge, close), in order.
pulls = sa.Table(
    "zl_pulls",
    metadata,
    sa.Column("repo_id", sa.Integer, primary_key=True),
    sa.Column("number", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("source", Name, nullable=False),
    sa.Column("target", Name, nullable=False),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("author", sa.Text, nullable=False),
    sa.Column("state", sa.String(8), nullable=False),  # open | merged | closed
    sa.Column("source_commit", Id, nullable=False),
    sa.Column("merge_commit", Id, nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.Index("zl_pulls_state", "repo_id", "state"),
)

pull_events = sa.Table(
    "zl_pull_events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("repo_id", sa.Integer, nullable=False),
    sa.Column("number", sa.Integer, nullable=False),
    sa.Column("kind", sa.String(8), nullable=False),  # comment | approve | merge | close
    sa.Column("author", sa.Text, nullable=False),
    sa.Column("body", sa.Text, nullable=False, server_default=""),
    sa.Column("commit_id", Id, nullable=True),
    sa.Column("at", sa.Float, nullable=False),
    sa.Index("zl_pull_events_pull", "repo_id", "number", "id"),
)


# Webhooks (version 8): URLs that receive a signed JSON POST for each commit, merge or pull
# request event of the repo (events: JSON list). The secret signs the body (HMAC-SHA256).
webhooks = sa.Table(
    "zl_webhooks",
    metadata,
    sa.Column("repo_id", sa.Integer, primary_key=True),
    sa.Column("url", sa.String(1024), primary_key=True),
    sa.Column("secret", sa.Text, nullable=False),
    sa.Column("events", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)


def tune_storage(conn: sa.Connection) -> None:
    """On PostgreSQL 14 and later, compress catalog nodes with lz4 rather than pglz: measured
    on a one-chunk commit, pglz spent 3.5 of the commit statement's 8 ms compressing the
    rewritten manifest shard, lz4 adds nothing measurable and compresses shards as well. A
    server built without lz4 keeps pglz."""
    version = conn.dialect.server_version_info or (0,)
    if conn.dialect.name != "postgresql" or version < (14,):
        return
    try:
        with conn.begin_nested():
            conn.execute(sa.text(f"ALTER TABLE {blobs.name} ALTER COLUMN data SET COMPRESSION lz4"))
    except sa.exc.DBAPIError:
        pass
