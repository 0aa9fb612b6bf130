package vine

// SpecBrief is the condensed guide agents read first (the MCP resource
// vine://spec/brief): the essentials of the .vine format and how an agent
// runs the execution loop with Trellis's vine tools.
const SpecBrief = "# VINE task graphs: the short version\n" + `
A ` + "`.vine`" + ` file is a plain-text plan: a graph of tasks, each depending on
other tasks, executed by agents from the leaves up until the first task (the
root) is complete. Trellis keeps every change to a graph as an event and
rewrites the file from that log, so the file is always the current state.

## The file in one example

` + "```" + `
vine 1.2.0
title: Release 2.0
---
[release] Publish release 2.0 (notstarted)
Tag, publish and announce.
-> build
-> docs
---
[build] Build the artifacts (started)
-> deps
> Building with Go 1.26.
@artifact text/plain ./dist/SHA256SUMS
---
[deps] Update dependencies (reviewing)
---
ref [docs] Documentation (./docs.vine)
` + "```" + `

- **Magic line**: the first line is ` + "`vine <major>.<minor>.<patch>`" + `. Versions 1.0.0,
  1.1.0 and 1.2.0 are read alike; Trellis always writes ` + "`vine 1.2.0`" + `.
- **Metadata**: ` + "`key: value`" + ` lines up to a line that is exactly ` + "`---`" + `.
  Known keys: ` + "`title`" + `, ` + "`delimiter`" + ` (the block separator, default ` + "`---`" + `)
  and ` + "`prefix`" + ` (the id namespace used when the file is inlined elsewhere).
  Other keys are kept.
- **Blocks**: one per node, separated by lines equal to the delimiter. The
  first block is the root; dependants come before their dependencies.
- **Headers** (first non-empty line of a block):
  task ` + "`[id] Short name (status)`" + `, reference ` + "`ref [id] Short name (path/to/child.vine)`" + `;
  either may end with annotations such as ` + "`@sprite(icon.png)`" + `. Ids are
  letters, digits and hyphens, in segments joined by ` + "`/`" + ` (` + "`infra/dns`" + `).
- **Statuses**: ` + "`notstarted`" + ` (not begun), ` + "`planning`" + `, ` + "`started`" + `,
  ` + "`reviewing`" + ` (believed done, waiting for a dependant to take it up),
  ` + "`complete`" + `, ` + "`blocked`" + ` (needs intervention).
- **Body lines**, first match wins: ` + "`-> id`" + ` depends on that node;
  ` + "`> text`" + ` is a decision or note; ` + "`@artifact|@guidance|@file <mime/type> <uri>`" + `
  is an attachment (tasks only); anything else is description.
- **Rules**: ids are unique; every ` + "`->`" + ` target exists; no cycles; every node
  is reachable from the root; references carry no attachments. A batch that
  would break a rule is refused as a whole.

## Running the loop

Each pass does a little housekeeping and then ONE task:

1. ` + "`vine_next {file}`" + ` returns the frontier: ` + "`needs_expansion`" + `,
   ` + "`ready_to_complete`" + `, ` + "`ready_to_start`" + `, ` + "`blocked`" + ` and ` + "`progress`" + `.
2. For each reference in ` + "`needs_expansion`" + `: ` + "`vine_expand {file, ref_id, child_file}`" + `
   with the reference's path (relative paths resolve against the parent file's
   directory); then call ` + "`vine_next`" + ` again.
3. For each task in ` + "`ready_to_complete`" + `:
   ` + "`vine_write {file, operations: [{\"op\": \"set_status\", \"id\": ID, \"status\": \"complete\"}]}`" + `.
4. ` + "`vine_claim {file}`" + ` claims the first task ready to start (or give ` + "`id`" + ` to
   claim that one). It is now ` + "`started`" + ` and comes with its dependencies'
   statuses, decisions and attachments: the input to your work. A null task
   means nothing is ready: stop and report the progress.
5. Do the work of that one task.
6. Record what you decided and produced, then hand it over, in one batch:
   ` + "`[{\"op\": \"update\", \"id\": ID, \"decisions\": [\"...\"], \"attachments\": [...]}, {\"op\": \"set_status\", \"id\": ID, \"status\": \"reviewing\"}]`" + `.
7. Repeat from 1 until ` + "`progress.root_status`" + ` is ` + "`complete`" + `.

If you cannot finish a task, set it ` + "`blocked`" + ` and add a decision saying why.

**The reviewing → complete hand-off.** A task in ` + "`reviewing`" + ` already satisfies
its dependants, so they become ready to start. Once one of them is started
(or further along), the reviewing task shows up in ` + "`ready_to_complete`" + ` and the
next pass marks it ` + "`complete`" + `. A reviewing root is ready to complete once
every other node is complete or reviewing. Never mark your own fresh work
complete directly.

**Claims are atomic.** Many agents may run this loop on the same file at once,
in one Trellis process or several. ` + "`vine_claim`" + ` hands each task to exactly one
agent; when you name a task another agent took first you get a ` + "`conflict`" + `
error, and ` + "`vine_claim`" + ` without ` + "`id`" + ` simply takes the next ready one. Prefer
` + "`vine_claim`" + ` to setting ` + "`started`" + ` by hand.

**Files and errors.** Files must lie inside the workspace roots Trellis was
started with; a relative path resolves against the first root. Edits made by hand are noticed and recorded; an edited file that
no longer parses is refused until it is fixed (or restored with
` + "`trellis vine export`" + `). Tool errors start with a stable code: ` + "`invalid`" + `
(then the argument at fault), ` + "`not_found`" + `, ` + "`conflict`" + `, ` + "`unavailable`" + `,
` + "`internal`" + `. Read ` + "`vine://spec/full`" + ` for every rule.
`

// SpecFull is the complete guide (the MCP resource vine://spec/full):
// the rules of the .vine format as Trellis reads and writes it, the
// frontier, the mutations, expansion, the read queries and the agent loop.
const SpecFull = "# VINE task graphs: the complete rules\n" + `
VINE is a plain-text format for dependency graphs of tasks executed by AI
agents. Trellis reads VINE 1.0.0, 1.1.0 and 1.2.0, writes canonical 1.2.0, and
runs each file as an event-sourced graph: every batch of changes, claim,
expansion and hand edit is an event, and the file is rewritten from the log
after each change.

## 1. File layout

1. **Magic line.** The first line is ` + "`vine <major>.<minor>.<patch>`" + `. Versions 1.0.0,
   1.1.0 and 1.2.0 follow the same rules; any other version is refused.
2. **Metadata.** Lines ` + "`key: value`" + ` (key made of ` + "`A-Z a-z 0-9 _ -`" + `, key and
   value trimmed) up to a line that is exactly ` + "`---`" + `. Known keys:
   - ` + "`title`" + `: the graph's title;
   - ` + "`delimiter`" + `: the line that separates blocks (default ` + "`---`" + `);
   - ` + "`prefix`" + `: the id namespace used when this file is inlined by an expansion.

   Unknown keys are kept and written back. Trellis skips blank metadata lines
   and refuses a key given twice.
3. **Blocks.** After the metadata come the node blocks, separated by lines that
   are exactly the delimiter. A trailing delimiter is allowed and empty
   trailing segments are dropped. Blank lines inside a block belong to it (they
   are description lines).
4. **Order.** The first block is the root. Blocks are listed root first,
   dependants before their dependencies; this is reading order only, the
   edges decide what runs when.

## 2. Headers

The first non-empty line of a block is its header (matched after trimming
surrounding whitespace). The reference form is tried first, then the task
form; a line matching neither is refused with its line number.

- **Task**: ` + "`[id] Short Name (status)`" + ` followed by optional annotations.

  ` + "`^\\[([a-zA-Z0-9-]+(?:/[a-zA-Z0-9-]+)*)\\]\\s+(.+?)\\s+\\((complete|started|reviewing|planning|notstarted|blocked)\\)((?:\\s+@[a-zA-Z][a-zA-Z0-9]*\\([^)]*\\))*)$`" + `
- **Reference** (a stand-in for another .vine file): ` + "`ref [id] Short Name (URI)`" + `
  followed by optional annotations.

  ` + "`^ref\\s+\\[([a-zA-Z0-9-]+(?:/[a-zA-Z0-9-]+)*)\\]\\s+(.+?)\\s+\\((\\S+)\\)((?:\\s+@[a-zA-Z][a-zA-Z0-9]*\\([^)]*\\))*)$`" + `
- **Ids** are one or more segments of ` + "`a-z A-Z 0-9 -`" + ` joined by ` + "`/`" + `.
- **Annotations** are ` + "`@key(v1,v2,...)`" + ` with key ` + "`[a-zA-Z][a-zA-Z0-9]*`" + `; values
  are split on ` + "`,`" + ` and trimmed. ` + "`@sprite(uri)`" + ` is the only defined one; unknown
  keys are kept. Trellis refuses the same key twice in one header.

### Statuses

| Status | Meaning |
| --- | --- |
| ` + "`notstarted`" + ` | planned, not begun |
| ` + "`planning`" + ` | being planned, work not begun |
| ` + "`started`" + ` | being worked on |
| ` + "`reviewing`" + ` | believed done; waiting for a dependant to consume it |
| ` + "`complete`" + ` | done; dependants can rely on it |
| ` + "`blocked`" + ` | needs intervention |

## 3. Body lines

Every other line of a block is classified by the first matching prefix:

1. ` + "`-> `" + `: a dependency on another id in the same file (target trimmed; a
   duplicate edge is merged);
2. ` + "`> `" + `: a decision or note, kept verbatim after the prefix;
3. ` + "`@artifact `" + `, ` + "`@guidance `" + `, ` + "`@file `" + `: an attachment
   ` + "`@<class> <mime/type> <uri>`" + `, allowed in task blocks only (such a line in a
   reference block is an error); an unknown ` + "`@class`" + ` is description text;
4. anything else: description; lines are joined with a newline and blank
   lines are kept.

## 4. Constraints

Checked after parsing and after every batch of mutations; each error names
the constraint and the ids involved:

- at least one block;
- ids unique across tasks and references;
- every ` + "`->`" + ` target exists;
- no cycles (the cycle's path is reported);
- every node reachable from the root along dependency edges (no islands);
- no attachments on references.

## 5. Canonical serialization

Trellis writes every file in canonical form, so a round trip is stable
(parse(serialize(g)) == g and serialize(parse(serialize(g))) == serialize(g)):

- the magic line ` + "`vine 1.2.0`" + `;
- known metadata keys in alphabetical order, then unknown keys (alphabetical);
  a ` + "`delimiter`" + ` equal to the default ` + "`---`" + ` is not written;
- ` + "`---`" + `, then the blocks in graph order joined by the delimiter;
- header annotations sorted by key, values joined by ` + "`,`" + ` without spaces;
- block body: description, dependencies sorted by id, decisions in order, then
  attachments grouped artifact, guidance, file (each group in original order);
- exactly one trailing newline and no trailing delimiter.

A writer must never produce text that reads back differently. Trellis refuses,
with a clear error, a description line that starts with ` + "`-> `" + ` or ` + "`> `" + ` or equals
the delimiter, a line break in a name or decision, an id outside the id
grammar, and an empty name.

## 6. The execution frontier (vine_next)

A dependency is **satisfied** when it names a concrete task in ` + "`complete`" + ` or
` + "`reviewing`" + `. An unexpanded reference never satisfies a dependency. Walking the
nodes in graph order, each node whose dependencies are all satisfied goes to:

- ` + "`needs_expansion`" + ` if it is a reference;
- ` + "`ready_to_start`" + ` if it is ` + "`notstarted`" + ` or ` + "`planning`" + `;
- ` + "`blocked`" + ` if it is ` + "`blocked`" + `;
- ` + "`ready_to_complete`" + ` if it is ` + "`reviewing`" + ` and at least one of its dependants is
  ` + "`started`" + `, ` + "`reviewing`" + ` or ` + "`complete`" + ` (its output is being consumed).
  Special case: a ` + "`reviewing`" + ` root is ready to complete when every other node is
  a concrete task in ` + "`complete`" + ` or ` + "`reviewing`" + `.

` + "`progress`" + ` reports ` + "`total`" + ` nodes, the ` + "`complete`" + ` count, ` + "`percentage`" + `
(complete×100/total rounded half up, in integer arithmetic), ` + "`ready_count`" + `
(the length of ` + "`ready_to_start`" + `), ` + "`root_id`" + `, ` + "`root_status`" + ` (` + "`ref`" + ` when the root is
a reference) and ` + "`by_status`" + ` (all six statuses, plus ` + "`ref`" + ` when references
exist). The computation is linear in nodes plus edges.

## 7. Status lifecycle

` + "```" + `
notstarted ──► started ──► reviewing ──► complete
     │                         ▲
     └──► planning ────────────┘
any status ──► blocked   (with a decision saying why)
` + "```" + `

## 8. Mutations (vine_write)

` + "`vine_write {file, operations}`" + ` applies a list of operations as ONE atomic batch:
they run in order, the result is validated once at the end (so a batch may
pass through invalid intermediate states), and on any error nothing of the
batch is recorded and the file is unchanged. Each operation is a JSON object with
` + "`op`" + ` and only the arguments that operation takes (any other argument is an
error). Ids, names and uris are trimmed; a decision written as ` + "`> text`" + ` is
stored as ` + "`text`" + `.

| op | arguments | effect |
| --- | --- | --- |
| ` + "`create`" + ` | none | start a new empty graph; must be the first operation, and a later ` + "`add_task`" + ` supplies the root |
| ` + "`add_task`" + ` | ` + "`id, name, status?, description?, dependsOn?, annotations?`" + ` | append a task at the end of graph order (status defaults to ` + "`notstarted`" + `) |
| ` + "`remove_task`" + ` | ` + "`id`" + ` | remove a node (never the root) and every edge pointing to it |
| ` + "`set_status`" + ` | ` + "`id, status`" + ` | set a task's status (not on references) |
| ` + "`claim`" + ` | ` + "`id`" + ` | set a task that is ready to start to ` + "`started`" + `, returning it with its resolved dependencies; a task that is not ready is a ` + "`conflict`" + ` |
| ` + "`update`" + ` | ` + "`id, name?, description?, decisions?, attachments?, annotations?`" + ` | rename, replace the description, append decisions and attachments (` + "`{class, mime, uri}`" + `), merge annotations (an empty list removes a key) |
| ` + "`add_dep`" + ` / ` + "`remove_dep`" + ` | ` + "`taskId, depId`" + ` | add or remove the edge taskId → depId |
| ` + "`add_ref`" + ` | ` + "`id, name, vine, description?, dependsOn?, decisions?`" + ` | append a reference to the file ` + "`vine`" + ` |
| ` + "`update_ref_uri`" + ` | ` + "`id, uri`" + ` | point a reference at another file |
| ` + "`extract_to_ref`" + ` | ` + "`id, vine, refName?`" + ` | move a task into a new child file ` + "`vine`" + ` and leave a reference (named refName, default the task's name) in its place |

Referenced and extracted files must lie inside the workspace roots.
Trellis's ` + "`vine_claim {file, id?, agent?}`" + ` is the safe way to claim: it picks the
first task ready to start when no id is given and never gives one task to two
agents.

## 9. Expanding a reference (vine_expand)

` + "`vine_expand {file, ref_id, child_file}`" + ` inlines the child graph C at the
reference node R:

- the prefix is C's ` + "`prefix`" + ` metadata, else R's id; an empty prefix means child
  ids are used as they are;
- C's root takes the id R; every other child id becomes ` + "`prefix/id`" + `, and all
  child dependency targets are remapped the same way; a collision with an
  existing parent id (other than R) is an error;
- R becomes a concrete task: it takes the child root's short name, status,
  description and attachments; its dependencies are R's own plus the child
  root's (remapped, de-duplicated); its decisions are the child root's
  followed by R's; R's annotations are kept;
- the other child nodes are inserted right after R in graph order, in their
  relative order; the result is validated.

A relative ` + "`child_file`" + ` resolves against the directory of the parent file and
must not escape the workspace roots. The child graph is recorded in the event,
so the graph replays without the child file.

## 10. Read queries (vine_read)

` + "`vine_read {file, action, id?, status?, query?}`" + `:

| action | arguments | answer |
| --- | --- | --- |
| ` + "`summary`" + ` | none | root, totals, leaf count, reference count, counts by status |
| ` + "`list`" + ` | ` + "`status?`" + `, ` + "`query?`" + ` | all nodes, or those in a status (` + "`ref`" + ` for references) and/or matching a text |
| ` + "`task`" + ` | ` + "`id`" + ` | one node in full |
| ` + "`context`" + ` | ` + "`id`" + ` | the node, its resolved dependencies (status, decisions, attachments) and its direct dependants |
| ` + "`descendants`" + ` | ` + "`id`" + ` | everything that transitively depends on the node: its blast radius |
| ` + "`search`" + ` | ` + "`query`" + ` | case-insensitive match over id, name and description |
| ` + "`refs`" + ` | none | the reference nodes |
| ` + "`validate`" + ` | none | the constraint check |

## 11. The agent loop

One pass of an agent:

1. ` + "`vine_next {file}`" + ` for the frontier.
2. Expand every reference in ` + "`needs_expansion`" + ` with ` + "`vine_expand`" + ` (child_file = the
   reference's path), then call ` + "`vine_next`" + ` again.
3. Complete every task in ` + "`ready_to_complete`" + `:
   ` + "`vine_write`" + ` with ` + "`{\"op\": \"set_status\", \"id\": ID, \"status\": \"complete\"}`" + `.
4. Claim ONE ready task with ` + "`vine_claim {file}`" + ` (it becomes ` + "`started`" + ` and comes
   with its dependencies' decisions and attachments). No task: stop and report.
5. Do the work.
6. Record decisions and attachments (` + "`update`" + `), then set the task ` + "`reviewing`" + `;
   both may go in one batch. If you are stuck, set ` + "`blocked`" + ` with a decision
   saying why instead.
7. Repeat until ` + "`progress.root_status`" + ` is ` + "`complete`" + `.

**Hand-off.** ` + "`reviewing`" + ` satisfies dependants, so they become ready while the
finished task waits. When a dependant starts, the reviewing task moves to
` + "`ready_to_complete`" + ` and the next pass completes it: completion is decided by
consumption, not by the agent that did the work.

**Concurrency.** Several agents may run the loop on one graph at once, through
one Trellis server or several sharing the same NATS log. Every command is
checked against the graph's last event, so claims are atomic: no task is
ever started by two agents. Naming a task someone else claimed first is a
` + "`conflict`" + `; ` + "`vine_claim`" + ` without an id moves on to the next ready task. When
` + "`ready_count`" + ` is above one, more agents can usefully join.

## 12. Trellis specifics

- Every file must lie inside the workspace roots the server was started with;
  a relative ` + "`file`" + ` resolves against the first root (not the MCP process's
  working directory). The first use of a file imports it into the log.
- After every change the file is rewritten in canonical form from the log. A
  refused call leaves the file byte for byte as it was, and reads never
  rewrite it (a missing file is written back).
- A file edited by hand is compared with the log on the next call: a real
  change is recorded as a hand edit; a file that no longer parses or
  validates is refused until fixed, or restored with
  ` + "`trellis vine export <graph> --out <file>`" + `.
- Errors start with a stable code: ` + "`invalid`" + ` (followed by the argument at fault),
  ` + "`not_found`" + `, ` + "`conflict`" + `, ` + "`unavailable`" + ` (retry later) or ` + "`internal`" + `.
`
