import { createHash } from 'node:crypto';
import type { Route } from './route-table.js';

/** How often the page reads the member again: a job every second shows each of its slots. */
export const DASHBOARD_POLL_INTERVAL_MS = 1000;

/** How long the page waits for one read before it shows the member as unreachable and tries again. */
export const DASHBOARD_REQUEST_TIMEOUT_MS = 5000;

/** Claims the page reads per poll (`/v1/history?limit=`), newest first, across all jobs. */
export const DASHBOARD_HISTORY_LIMIT = 200;

/** Jobs the page lists and draws a timeline for: with thousands of jobs, the page stays light. */
export const DASHBOARD_MAX_JOBS = 200;

/** Slots drawn in one job's timeline, newest first. */
export const DASHBOARD_SLOTS_PER_JOB = 20;

const STYLE = `
body { font: 14px system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; margin: 0 0 .3em; } h2 { font-size: 1.05em; margin: 1.4em 0 .4em; }
table { border-collapse: collapse; } td, th { padding: .2em .7em; border-bottom: 1px solid #ddd; text-align: left; }
#status.stale { color: #b00; } .muted { color: #888; }
.lane { display: flex; align-items: center; gap: 3px; margin: 3px 0; }
.lane .name { width: 14em; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.slot { font-size: 11px; padding: 2px 4px; border-radius: 3px; background: #eee; white-space: nowrap; }
.slot.ok { background: #cfc; } .slot.bad { background: #fcc; } .slot.skip { background: #eee; color: #777; } .slot.run { background: #cdf; }
`;

// The page's script: plain browser JavaScript, which renders every value as text (textContent,
// attributes), never as markup, since job, topic and member names come from users.
const SCRIPT = `
'use strict';
var POLL_INTERVAL_MS = ${DASHBOARD_POLL_INTERVAL_MS}, REQUEST_TIMEOUT_MS = ${DASHBOARD_REQUEST_TIMEOUT_MS};
var HISTORY_LIMIT = ${DASHBOARD_HISTORY_LIMIT}, MAX_JOBS = ${DASHBOARD_MAX_JOBS}, SLOTS_PER_JOB = ${DASHBOARD_SLOTS_PER_JOB};
var KINDS = { succeeded: 'ok', failed: 'bad', aborted: 'bad', interrupted: 'bad', missed: 'bad', skipped: 'skip', replaced: 'skip', cancelled: 'skip' };
var updates = 0;

function el(tag, cls, children) {
  var node = document.createElement(tag);
  if (cls) node.className = cls;
  (children || []).forEach(function (c) { node.append(c instanceof Node ? c : String(c)); });
  return node;
}
function row(cells) {
  return el('tr', '', cells.map(function (c) { return c instanceof Node && c.tagName === 'TD' ? c : el('td', '', [c]); }));
}
function fill(id, rows, empty, columns) {
  var body = document.querySelector('#' + id + ' tbody');
  if (rows.length === 0) {
    var td = el('td', 'muted', [empty]);
    td.colSpan = columns;
    rows = [el('tr', '', [td])];
  }
  body.replaceChildren.apply(body, rows);
}
// The cluster's day (UTC) as last rendered: an instant on another day shows its date too (a
// job's next slot next year read '00:00:00.000', as if it were tonight).
var today = null;
function time(iso) {
  if (iso === null || iso === undefined) return '\\u2014';
  var text = new Date(iso).toISOString();
  return text.slice(0, 10) === today ? text.slice(11, 23) : text.slice(0, 10) + ' ' + text.slice(11, 23);
}
function orDash(v) { return v === null || v === undefined ? '\\u2014' : v; }
// Durations as a person reads them: whole milliseconds below a second, then seconds to a tenth
// (state() gives fractions of a millisecond: '0.651213999997708 ms ago' was on the page).
function duration(ms) { return Math.abs(ms) < 1000 ? Math.round(ms) + ' ms' : (ms / 1000).toFixed(1) + ' s'; }
function outcomesText(outcomes) {
  var members = Object.keys(outcomes || {});
  return members.length === 0 ? 'no outcome yet' : members.map(function (m) { return m + ': ' + outcomes[m].outcome; }).join(', ');
}

function renderMembers(state) {
  document.getElementById('term').textContent = String(state.term);
  fill('members', state.members.map(function (m) {
    var role = m.id === state.leader ? 'leader' : m.voter ? 'follower' : 'learner';
    var offset = m.clockOffsetMs === null ? '\\u2014' : (m.clockOffsetMs >= 0 ? '+' : '') + duration(m.clockOffsetMs) + (m.clockSkewed ? ' (skewed)' : '');
    var tr = row([m.id + (m.id === state.id ? ' (this)' : ''), role, orDash(m.lag), offset, m.reachable ? 'yes' : m.dialFailure === 'handshake' ? 'no (handshake failed: another secret?)' : 'no', m.lastContactMs === null ? 'never' : duration(m.lastContactMs) + ' ago']);
    tr.setAttribute('data-member', m.id);
    return tr;
  }), 'no members', 6);
}

// A job's last claim is often of a slot still to come (claimed ahead), so its last run is the
// newest claim in the history read with an outcome, or the last claim's when history has none.
function lastRunText(job, slots) {
  var ran = (slots || []).find(function (h) { return Object.keys(h.outcomes).length > 0; });
  if (ran !== undefined) return time(ran.slot) + ' \u2014 ' + outcomesText(ran.outcomes);
  if (job.lastClaim === null) return 'never';
  return time(job.lastClaim.slot) + ' \u2014 ' + outcomesText(job.lastClaim.outcomes);
}

function renderJobs(jobs, byJob) {
  fill('jobs', jobs.slice(0, MAX_JOBS).map(function (j) {
    var paused = j.paused === undefined ? '\u2014' : j.paused ? 'paused' : 'no';
    var lastCell = el('td', 'last', [lastRunText(j, byJob.get(j.name))]);
    var tr = row([j.name, j.spec, j.mode, time(j.nextSlot), lastCell, paused, j.running.length, j.missedSlots, j.skippedRuns]);
    tr.setAttribute('data-job', j.name);
    return tr;
  }), 'no jobs', 9);
  document.getElementById('jobs-more').textContent = jobs.length > MAX_JOBS ? (jobs.length - MAX_JOBS) + ' more jobs not shown' : '';
}

function slotCell(h) {
  var slotMs = Date.parse(h.slot);
  var members = Object.keys(h.outcomes);
  var parts = members.map(function (m) {
    var o = h.outcomes[m];
    return { kind: KINDS[o.outcome] || 'other', text: m + ' ' + o.outcome + ' +' + Math.round(o.atMs - slotMs) + ' ms' };
  });
  Object.keys(h.running).forEach(function (m) {
    if (!(m in h.outcomes)) parts.push({ kind: 'run', text: m + ' running, started +' + Math.round(h.running[m].startedAtMs - slotMs) + ' ms' });
  });
  if (parts.length === 0) parts.push({ kind: 'other', text: 'claimed for ' + (h.assignees.join(', ') || 'nobody') });
  var cell = el('span', 'slot ' + parts[0].kind, [time(h.slot) + ' ' + parts.map(function (p) { return p.text; }).join('; ')]);
  cell.title = h.slot + (members.some(function (m) { return h.outcomes[m].error; }) ? ': ' + members.map(function (m) { return h.outcomes[m].error || ''; }).join(' ') : '');
  return cell;
}

/** The claims read, by job, newest first, at most SLOTS_PER_JOB each. */
function slotsByJob(history) {
  var byJob = new Map();
  history.forEach(function (h) {
    var slots = byJob.get(h.job) || [];
    if (slots.length < SLOTS_PER_JOB) slots.push(h);
    byJob.set(h.job, slots);
  });
  return byJob;
}

function renderTimeline(jobs, byJob) {
  var lanes = jobs.slice(0, MAX_JOBS).filter(function (j) { return byJob.has(j.name); }).map(function (j) {
    var lane = el('div', 'lane', [el('span', 'name', [j.name])].concat(byJob.get(j.name).map(slotCell)));
    lane.setAttribute('data-job', j.name);
    return lane;
  });
  var timeline = document.getElementById('timeline');
  timeline.replaceChildren.apply(timeline, lanes.length === 0 ? [el('p', 'muted', ['no slots claimed yet'])] : lanes);
}

function renderTopics(topics) {
  fill('topics', topics.map(function (t) {
    var inFlight = Object.keys(t.inFlight).reduce(function (sum, m) { return sum + t.inFlight[m]; }, 0);
    var finished = t.done + t.dead;
    var bar = el('progress', '', []);
    bar.max = Math.max(t.emitted, 1);
    bar.value = Math.min(finished, bar.max);
    var tr = row([t.name, Object.keys(t.consumers).length, t.pending, inFlight, t.emitted, t.done, t.failed, t.dead, el('td', '', [bar, ' ' + finished + '/' + t.emitted])]);
    tr.setAttribute('data-topic', t.name);
    return tr;
  }), 'no topics', 9);
}

function render(state, history) {
  today = new Date(state.clock.clusterTime).toISOString().slice(0, 10);
  document.getElementById('member').textContent = state.id;
  document.getElementById('role').textContent = state.role + ', ' + state.status;
  document.getElementById('leader').textContent = orDash(state.leader);
  document.getElementById('cluster-time').textContent = time(state.clock.clusterTime) + (state.clock.synced ? '' : ' (not synced)');
  renderMembers(state);
  var byJob = slotsByJob(history);
  renderJobs(state.jobs, byJob);
  renderTimeline(state.jobs, byJob);
  renderTopics(state.topics);
  document.body.setAttribute('data-updates', String(++updates));
}

function setStatus(text, stale) {
  var status = document.getElementById('status');
  status.textContent = text;
  status.className = stale ? 'stale' : '';
}

async function read(path, signal) {
  var answer = await fetch(path, { signal: signal, headers: { accept: 'application/json' } });
  if (!answer.ok) throw new Error('HTTP ' + answer.status + ' for ' + path);
  return answer.json();
}

async function poll() {
  try {
    var signal = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
    var answers = await Promise.all([read('v1/state', signal), read('v1/history?limit=' + HISTORY_LIMIT, signal)]);
    render(answers[0], answers[1].history);
    setStatus('updated at ' + new Date().toISOString().slice(11, 19) + ' UTC, every ' + POLL_INTERVAL_MS + ' ms', false);
  } catch (error) {
    setStatus('could not read the member (' + error.message + '); trying again', true);
  }
  setTimeout(poll, POLL_INTERVAL_MS);
}
poll();
`;

const BODY = `
<h1>cronraft: member <span id="member">\u2014</span> (<span id="role">\u2014</span>)</h1>
<p>Leader <strong id="leader">\u2014</strong>, term <span id="term">\u2014</span>; cluster time <span id="cluster-time">\u2014</span> UTC. <span id="status">loading\u2026</span></p>
<h2>Members</h2>
<table id="members"><thead><tr><th>member</th><th>role</th><th>lag</th><th>clock offset</th><th>reachable</th><th title="A follower hears the other followers only in elections: its leader alone is heard every heartbeat">last heard</th></tr></thead><tbody></tbody></table>
<h2>Jobs</h2>
<table id="jobs"><thead><tr><th>job</th><th>spec</th><th>mode</th><th>next slot (UTC)</th><th>last slot and outcome</th><th>paused</th><th>running</th><th>missed</th><th>skipped</th></tr></thead><tbody></tbody></table>
<p id="jobs-more" class="muted"></p>
<h2>Recent slots (newest first: slot time, member, outcome, when it was recorded after the slot)</h2>
<div id="timeline"></div>
<h2>Fan-out topics</h2>
<table id="topics"><thead><tr><th>topic</th><th>consumers</th><th>pending</th><th>in flight</th><th>emitted</th><th>done</th><th>failed</th><th>dead</th><th>finished</th></tr></thead><tbody></tbody></table>
`;

/** The dashboard: one self-contained page (no external script, style or font), served at `GET /`. */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>cronraft</title><style>${STYLE}</style></head>
<body>${BODY}<script>${SCRIPT}</script></body></html>
`;

const hashOf = (text: string): string => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/**
 * The page may run its own script and style (by hash) and read this server, and nothing else:
 * a value that slipped through as markup still could not run or load anything.
 */
const CONTENT_SECURITY_POLICY = `default-src 'none'; script-src ${hashOf(SCRIPT)}; style-src ${hashOf(STYLE)}; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

/** `GET /`: the dashboard, read-only like the JSON it polls (no token). */
export function dashboardRoute(): Route {
  const answer = { text: DASHBOARD_HTML, contentType: 'text/html; charset=utf-8', headers: { 'content-security-policy': CONTENT_SECURITY_POLICY } };
  return { method: 'GET', path: '/', action: false, handle: () => answer };
}
