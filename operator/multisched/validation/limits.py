"""Every size and depth bound multisched holds its input to, with the reason for each.

Two kinds of input reach recursive code: files a user hands to the offline commands
(``simulate``, ``validate``, ``explain``'s snapshots), read by ``yamlsafe``, and objects the
API server stores, read by the operator. Each bound sits far above what any real input
needs and far below what would take the process down (``RecursionError``, exhausted memory,
or a status the API server refuses). The README's "Size and depth bounds" lists them too.

It imports nothing, so any module may import it.
"""

from __future__ import annotations

# --- Files: YAML and JSON read by yamlsafe ------------------------------------------------

#: Deepest nesting of a document. Deeper than any Kubernetes object (a pod spec is about 12
#: levels); PyYAML's composer recurses once per level, so far less than Python's recursion
#: limit (1,000) must do.
YAML_MAX_DEPTH = 64
#: Nodes per document with aliases expanded; a 5,000-node cluster file is far below. Every
#: later walk of the data (validation, parsing) expands aliases, so this bounds their work.
YAML_MAX_NODES = 2_000_000
#: Nodes that aliases may add to a stream: generous for shared snippets, nothing like an
#: anchor bomb (``a: &a [*b, *b, ...]``, a few lines that expand to billions of values).
YAML_MAX_ALIASED = 100_000
#: Nesting the libyaml fast path may be handed: its composer recurses in C, on the C stack,
#: which no Python limit guards. A cheap scan of the text must prove the nesting below this
#: before libyaml sees it; anything else goes through the bounded pure-Python reader.
LIBYAML_MAX_DEPTH = 1_000

# --- SchedulerProfile objects, as the API server stores them ------------------------------

#: kube-apiserver refuses JSON nested deeper than this ("exceeded max depth"), but stores
#: anything up to it, and a CRD field with ``x-kubernetes-preserve-unknown-fields`` (a
#: plugin's free-form args) takes whatever comes.
API_MAX_DEPTH = 10_000
#: The operator's Python recursion limit: enough frames to *decode* API_MAX_DEPTH levels
#: (``json.loads`` in kopf's watch and in the client's fallback decoder) with room for the
#: stack beneath. At the default 1,000, one deep object raises RecursionError in the
#: watcher, which stops the whole operator, at every start (``operator/depth.py`` sets it).
RECURSION_LIMIT = 3 * API_MAX_DEPTH
#: Deepest nesting read from a SchedulerProfile's spec. Built-in args need about 12 levels;
#: anything far deeper is refused on the object's status (``Ready=False``), measured without
#: recursion, before recursive code (pydantic, copies) sees it.
MAX_SPEC_DEPTH = 64
#: ``metav1.Condition`` message limit (the CRD's maxLength), in bytes: a longer message
#: makes the API server refuse the whole status, so it is cut at a line boundary instead.
CONDITION_MESSAGE_LIMIT = 32_768
