// Package agentmemory is the agent memory domain (the TaskEngine and the
// ConsolidationEngine): agent tasks with their objectives and agents, the
// observations agents record on branches, and their three-level
// consolidation into facts. It decides every change through package
// command (checked appends on the task's or the memory scope's
// aggregate); the pure consolidation logic it applies (what becomes a
// fact, what is a duplicate, what a merge keeps) is package memory.
//
// What it decides: task creation (a name no open task holds, its branch
// and memory scope), an agent joining a task, objective moves, an agent's
// completion (its sessions' and its agent consolidation) and a task's
// completion (classification of its facts as durable or ephemeral, and
// with merge their merge into the parent branch), observations, and
// session consolidations. Reads (task show, list and context, facts,
// history) come from the task views and fact store projections.
//
// Which events it appends:
//   - on TRELLIS_TASKS, trellis.tasks.<name>.<type>: created,
//     agent_joined, objective_updated, agent_completed, completed;
//   - on TRELLIS_MEMORY, trellis.memory.<scope>.<type>: observed and
//     consolidated (one consolidation run: the facts it creates, updates,
//     deduplicates and supersedes).
//
// The root package's trellis.MemoryService interface is what the
// transports see of it (Service implements it); handlers.Service composes
// it with the other domains. Its tasks are agent tasks, not the queue
// tasks of package taskqueue nor the nodes of a VINE graph.
package agentmemory
