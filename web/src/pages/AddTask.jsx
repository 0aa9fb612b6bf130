// Add a task to a queue from the dashboard (POST /v1/queue/tasks, as the
// caller). Shown only to a role that may add.

import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { notify } from '../components/common.jsx';

export function AddTask({ queue, onAdded }) {
  const [problem, setProblem] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    const form = e.currentTarget;
    const f = form.elements;
    const body = { objective: f.objective.value.trim(), queue: f.queue.value.trim() || 'default' };
    if (f.acceptance.value.trim()) body.acceptance = f.acceptance.value.trim();
    const attempts = Number(f.max_attempts.value);
    if (attempts > 0) body.max_attempts = attempts;
    setBusy(true);
    try {
      const t = await api('/v1/queue/tasks', { method: 'POST', body });
      setProblem('');
      f.objective.value = '';
      f.acceptance.value = '';
      notify(`Task ${t.task_id} added to ${t.queue}.`, 'ok');
      onAdded && onAdded(t);
    } catch (err) {
      setProblem(`Not added: ${err.message}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <details class="add-task">
      <summary>Add a task</summary>
      <form class="act-form" aria-label="Add a task" onSubmit={submit}>
        <label>
          Objective
          <textarea name="objective" rows="2" required maxlength="10000" placeholder="What the worker should achieve" />
        </label>
        <div class="filters">
          <label>
            Queue
            <input name="queue" defaultValue={queue || 'default'} required autocomplete="off" />
          </label>
          <label>
            Max attempts
            <input name="max_attempts" type="number" min="1" max="100" placeholder="3" />
          </label>
          <label class="grow">
            Acceptance (optional)
            <input name="acceptance" autocomplete="off" placeholder="How to tell it is done" />
          </label>
        </div>
        {problem && (
          <p class="error" role="alert" data-testid="add-problem">
            {problem}
          </p>
        )}
        <div class="actions">
          <button type="submit" class="primary" disabled={busy} data-action="add-task">
            Add task
          </button>
        </div>
      </form>
    </details>
  );
}
