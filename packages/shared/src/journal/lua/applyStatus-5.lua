--[[
  The one transition script for task state: applies an observed status (from a
  stream event, a subscription snapshot, GetTask, ListTasks or a push) or a
  local outcome, forward only. A finished state never changes again, whatever
  a stale read or a late event says (field case R12).
  KEYS[1] delegation hash
  KEYS[2] artifacts hash
  KEYS[3] the delegation's lease (send and follow lease, lease-1.lua; same hash tag, same slot)
  KEYS[4] the task id's owner key (Journal.bindTask) when ARGV[12] is 'here:…' (one server only: another
          Cluster slot); else KEYS[1] again, unused
  KEYS[5] the unfinished index when ARGV[14] is 'handover:<ms>:<check at>:…' with a check time (one server
          only: another Cluster slot); else KEYS[1] again, unused
  ARGV[1]  fencing token ('' = unfenced: reconciler and push, which use ARGV[2])
  ARGV[2]  expected version ('' = any)
  ARGV[3]  mode: 'event' | 'snapshot' (replaces state, even an equal one) | 'outcome' (local decision)
  ARGV[4]  journal state
  ARGV[5]  status timestamp in ms ('' = unknown)
  ARGV[6]  status timestamp as sent by the agent ('' = unknown)
  ARGV[7]  taskId ('' = not given)
  ARGV[8]  contextId returned by the agent ('' = not given)
  ARGV[9]  now (ms)
  ARGV[10] question key ('' = unknown): status-scripts.ts questionKeyOf (the status message's messageId, hashed when
           it could read as one of our keys; else '#t' and its timestamp); identifies the question a reply answers.
           Unknown: a new one each time the delegation enters a parked state ('#seq<questionSeq>'). A key asked again
           after our answer to it was delivered is journaled as '<key>#re<questionSeq>' (a new question: its own answer,
           link, event). No agent's key holds a '#' (questionKeyOf): the keys made here are out of its reach.
  ARGV[11] the question key of ARGV[10]'s status in the form rows journaled before keys had a namespace of their
           own still hold (status-scripts.ts legacyQuestionKeyOf; '' = the same): a row's key, asked keys or answered key
           in that form name the same question (read both forms).
  ARGV[12] '1' when the task id in ARGV[7] is bound to this delegation (Journal.bindTask);
           a task id is recorded only then (a task id belongs to at most one delegation);
           'here:<ttl ms>:<owner>': a new task id is bound here to <owner> (indexMember), in KEYS[4]
           (SET NX GET, as bindTask; ttl 0 = kept), only when this change records it: one round trip
           instead of a bind before
  ARGV[13] lease holder token ('' = no lease ends here): the lease in KEYS[3] is released in
           the same step when this holder has it, on every outcome (ARGV[14] 'always': the send
           lease, given back with the send's answer) or when the delegation is finished afterwards
           (ARGV[14] 'finished': the follow lease, at the stream's terminal event; a row already
           finished or gone counts, and a refused change reads the row's state). One round trip
           instead of a lease-1.lua release after it. Property: test/journal/lease-ending.test.ts.
  ARGV[14] 'always' | 'finished' (with ARGV[13]) | 'handover:<duration ms>:<check at>:<follow token>': the send
           lease passes to the follow of this process, as takeFollow-2.lua would take it (the lease
           under the follow token for <duration ms>, the fencing token bumped, the owner the follow
           token), when the change was applied, left the row unfinished and not parked, and ARGV[13]
           held the lease; on every other outcome it is released as with 'always'. One round trip
           instead of the follow's takeFollow after it. The reply then carries the new fence (6th). With
           <check at> (ms, '' = none) the delegation's unfinished-index entry (KEYS[5]) is due then, as the
           follow's own check beside its stream would set it (ZADD XX: an entry its workflow dropped is not put
           back): one command less.
  ARGV[15] the row's version as the caller holds it ('' = none): when the row is at that version before this change,
           the reply carries only what the caller's typed record lacks (the change: every field written here, and the
           fields other scripts write without a version bump, FIELDS_UNVERSIONED below), else the whole row. The
           change reads 22 of the row's 30 or so fields into Lua (the version among them: one HMGET) and sends back about
           half of them.
  ARGV[16..] the arguments most changes do not have, each '' when absent; the caller leaves out the '' ones at the end
           (a missing argument reads as ''): each argument costs redis-server about 1,000 instructions, and the common
           change (a status without message, result, error or artifacts) sends 15 instead of 24. Their positions are named
           (AT_STATUS_MESSAGE …, at the top of `apply`; status-scripts.ts APPLY_STATUS_ARGV the same numbers).
  ARGV[16] status message JSON ('' = none: an agent's status without a message clears the previous one): the question
           when the state is parked
  ARGV[17] result JSON ('' = unchanged)
  ARGV[18] error JSON ('' = unchanged)
  ARGV[19] '1': this change binds the row to a task a Message answer named, not yet read (core/transitions.ts
           `namedTaskRow`): 'namedTaskUnread' is set; '' = not that: any status of the agent (mode other than
           'outcome') applied clears a set flag ('0'). Our own outcomes leave it.
  ARGV[20] the ordered channel this observation came on ('' = none: a read, a push, a send's answer): the id of one
           stream (io/stream.ts `readStream`: one per SubscribeToTask or rest of a streaming send). A stream's events
           arrive in the order the agent's store wrote them (spec: a stream's events are ordered) and one run applies
           them one after the other, so an event of the stream that wrote the row's status ('statusStream'; '~<id>': a
           stream that caught up with it) is later than that status whatever the stamps say (see "Ordered channels"
           below). A streaming send's answer carries its stream's id (the follow reads the rest under it).
  ARGV[21] '' (most changes), or an outcome that says nothing of ours was sent (delivery `not-sent`: the agent
           unreachable until the step's bound, core/transitions.ts `waitForAgent`), written only while the row is as the
           run that tried left it (unreachable35; the rule of noteUnreachable-1.lua): INTENT, no task bound, no suspect
           evidence (includes/suspects.lua `keepsSuspects`: a task a refused push showed holding our message), no refused
           result, and the mark the run's own: '-' the row unmarked, else the mark's sendStartedAt (ms; with ARGV[2] the
           version that mark wrote). Else VERSION_CONFLICT and nothing is written: the reconciler decides. Before, a
           FAILED AGENT_UNREACHABLE was written on the fence alone, over a suspect noted since: the step went to another
           agent while the first one may have been doing it.
  ARGV[22] the messageId of the last agent message an unfinished, unparked status of the agent follows (status.ts
           `wordsCut`, question-words.ts; '' = none known): applied, it is the row's `questionWordsAfter` (it wins over the
           id of the status message the change clears: it came after it), so a later read of a question without words
           takes only the messages after it (A36: a progress message before a later status is never the question). A
           cut other than the row's makes an equal status no 'duplicate' (a new message came before it).
  ARGV[23] with question words in ARGV[16] cut from the caller's copy of the row (a Task's history: status.ts
           `questionWordsOn`, question-words.ts `wordsBasisOf`; '' = none): that copy's cut (state, status message id,
           `questionWordsAfter`, a question held, each as '<bytes>:<text>'). Unequal to the row's as stored: the status is
           applied as without a message (its key is the status's alone either way; a later read with the row takes the
           words), review35: another writer moved the cut since the copy was read.
  ARGV[24] number of the Task's artifacts N ('' = leave artifacts untouched), then, from ARGV[27], N quadruples
           artifactId, meta JSON, parts JSON array, bytes. Any mode: a full Task
           (snapshot or pushed event) stores its artifacts in the transition that applies its status, so a
           finished row always holds the result the Task carried. A FINISHED state's list replaces the stored
           artifacts (`[]` included: the agent's last word); an unfinished one's is merged in (replaceArtifacts.lua
           `mergeArtifacts`): the held artifacts it leaves out are kept (a stale snapshot proves nothing about them),
           `[]` changes nothing; a merge whose bytes (the Task's and those kept) would pass ARGV[26] replaces instead
           (the stored bytes stay within the limit; what it drops is in `leftOut`, in doubt until a full read).
           Either way the reply names the held ids the list left out (`leftOut`, whatever the outcome once the row
           is found unfinished), read in this same script: the stream's `takenBack`
  ARGV[25] bytes the Task's artifacts carry (artifactByteSize summed; checked against the
           limit by the caller, the journal), kept as 'artifactBytes'
  ARGV[26] artifactBytesPerDelegation: the limit on the delegation's artifact bytes (an unfinished Task's merge
           that would pass it replaces instead, above)
  ARGV[27 + 4N] artifactsPerDelegation: the limit on the artifacts the row holds (absent = none): an unfinished Task's
           merge whose list and the held ids it leaves out would pass it replaces instead, as for the bytes (attack35:
           lists each within the limit, merged one after another, held every id, and every later Task's script went
           over all of them; the Task's own list is held within the limit by the caller, the journal)
  ARGV[28 + 4N] (N = 0 without a list) the error JSON of a COMPLETED change whose status message the journal had to
           cut (status.ts `overLimitIfResult`; '' = none): when the row holds no artifacts after the change (the
           finished Task's list is empty, or without a list the row's 'artifactCount' is 0), the status message is the
           step's result (the view's `resultText`), so the change is written AMBIGUOUS with this error (LIMIT_EXCEEDED,
           the excerpt kept), never COMPLETED with part of its result (overstatus35); with artifacts it stays COMPLETED
  Finished rows do not expire here: the whole workflow expires when it finishes
  (updateWorkflow), so a step's record outlives every later decision about it.
  A change of state also sets the workflow row's 'updatedAt' (<prefix>:{wf:<id>}:wf, derived
  from KEYS[1]: same hash tag, same slot), and returns the workflow's state, cancelRequested
  and stopping read on the way (what the router needs), so the caller reads nothing more.
  A delegation entering a parked state publishes it on '<prefix>:{wf:<id>}:changed' (wakes
  the producer's waitFor with untilQuestion).
  Returns: {1, version, record, workflow, finished, fence, whole, leftOut, rewritten} applied: record = the row as written (flat
           field/value list) when whole is 1, or the change against the caller's copy (ARGV[15]) when whole is 0;
           workflow = {state, cancelRequested, stopping} when it changed to an
           unfinished state, else {}; finished = {workflow row (flat), delegation ids} when it
           changed to a finished state (what the settle decides from), else {}; fence = the follow's fencing
           token when the send lease was handed over (ARGV[14] 'handover:…'), else 0; leftOut = the ids of the artifacts
           the row held that the Task's list (ARGV[24]) leaves out, in their held order, only when the change carries a
           list; rewritten = the ids of the held artifacts an UNFINISHED Task's list carried with other content (parts
           or meta) than the stored copy, which it wrote over (a stale snapshot taken between two chunks: older than
           what the stream stored; review16m), only when an unfinished change carries a list;
           {0, reason, leftOut} ignored ('finished' without leftOut, 'stale', 'regress',
           'duplicate'); {DELEGATION_MISSING,'missing'}, {FENCE_LOST,'fence'}, {VERSION_CONFLICT,'version'},
           {TASK_MISMATCH,'task'}; {TASK_NOT_BOUND, agentCardUrl}: bind the task id first, then call again with
           ARGV[12] = '1'; {TASK_BOUND_ELSEWHERE, holder}: the task id is bound to another delegation (ARGV[12]
           'here:…'), nothing written (codes: script-codes.ts)
  A new question (entering a parked state, or a parked row asked under another question key) is appended to the
  workflow's history (lua/includes/history.lua) with its message: the row's question is replaced by the next status,
  the history keeps it. A new question clears `replyError` (a refused answer's reason, markReply-1.lua): that answer
  was to the question before, so the new one is never shown nor notified as "previous answer refused".
  A question's words (question-words.ts, question35): a parked status without a message may carry the agent's words
  from its messages as ARGV[16] (its key then from the status alone, ARGV[10]); a bare re-read of the question the row
  is parked on (the same parked state, no message, the same key or none) keeps the row's question and status message
  and is the row's status again (`bareAgain`). `questionWordsAfter` (question-words.ts `cutsOf`): the messages a later
  question's words come after (a read's history is cut after the latest of them; '-': none): the ids of the status
  message a status without one cleared, of the last agent message an unparked status followed (AT_WORDS_CUT) and, on a
  question without words, of the status message before it; the newest CUTS_KEPT, written as a JSON list, newest first
  (rows of older releases may hold one id as it is: read as a list of that one). Kept whole: which of two is later the row cannot always tell (a
  Task's history may hold its status message or not; A36, question36).
  The agent's clock orders events within one stretch of the task only (between two of our delivered replies): a
  question under a key never asked (askedKeys, askedKeys.lua) that arrives when the row's question has our reply
  delivered is new whatever its stamp (an agent clock far ahead must not hide it), and it starts a new stretch: the
  stamp the row held becomes the floor ('clockFloorMs'), so an event of an earlier stretch replayed later, stamped at or
  below it or not stamped, is 'stale' even when newer than the new question's stamp (a later event that can only be
  ordered by a clock that was far ahead waits for a finished state or the next new question). A row without a stamp
  gets the floor FLOOR_UNSTAMPED (below every stamp): a stamp-less event is then 'stale' only while the row waits for
  our answer to its question. A question asked under a key the row was parked on before its latest question is 'stale'
  (asked before what we already moved past) unless asked again (`askedLater`: our answer to the row's question
  delivered, a stamp later than the row's and the floor): then, like the row's own key asked again, it is a new
  question under a key made here ('<key>#re<n>'; docs/people.md "Question keys").
  Ordered channels (streamorder30): the row keeps the id of the stream whose event wrote its status ('statusStream',
  ARGV[20]; '' when a read or a push wrote it). An event later on that same stream is applied whatever its stamp (the
  same-rank clock rules and a key asked before are passed; a rank below still 'regress'es and a finished row never
  changes); when it overrules a later stamp (or has none) that stamp becomes the floor ('clockFloorMs'), so an
  unordered observation (a late push, a GetTask that raced the stream, a resubscription's snapshot: another stream)
  must be stamped after every stamp seen. Stamps order only observations from different channels. The row's own status
  again (state, stamp and message) is never 'stale': an unordered one (a GetTask of what the stream said) leaves the
  stream's claim, another stream's (a resubscription's snapshot) takes it; any other observation applied takes it too
  ('' for an unordered one). A stream's own order holds from its first event (streamorder31): an event of a stream
  that does not hold the order, showing the row's status (same state and message) but refused (stamped earlier: a
  resubscription's snapshot of the task as it is, stamped by a replica whose clock is behind) caught the stream up with
  the row: its later events are later than the row's status, and the stream takes the order as '~<id>' (nothing else
  written); the row's very status (stamp too) gives the whole order. Caught up, not the whole order: a question the row
  was parked on before, asked again on it, is judged by the stamps (a replica behind replays what the row moved past).
  A stream whose first event shows another status than the row's, refused, takes nothing: its events are ordered by
  their stamps until one shows the row's status or is applied. On the stream that holds the whole order, the row's own
  question after our delivered answer to it is asked again (a key made here). Where a floor shows the clocks disagree,
  an unordered observation never takes the row off a question our answer has not reached to WORKING (a status the
  journal never saw, stamped after every stamp seen: the limit below). Limit (no fix without an order the protocol does
  not carry: a TaskStatus has no sequence number): any other unordered observation of a status the journal never saw,
  stamped after every stamp seen, is taken as newer; it may be older (written by a replica with a fast clock while no
  stream was open, pushed late). Property: test/journal/stream-order.test.ts; cases: the same file and
  test/stream/skewed-stream-order.test.ts.
  Side jobs are includes (lua/includes/): bindTaskHere, touchWorkflow, publishChange (in workflowKeys), endLease; and,
  defined only by a call that needs them (`rare`), replaceArtifacts, history, askedKeys.
]]
--- @include "prelude"
--- @include "workflowKeys"
--- @include "bindTaskHere"
--- @include "touchWorkflow"
--- @include "endLease"

-- The helpers only rare paths use (a Task's artifact list; a question's history entry and asked keys), defined on the
-- first use in a call rather than in every call's prelude: an EVAL script keeps nothing from one call to the next, so
-- each of its functions is a closure made on every call (replaceArtifacts, history and askedKeys made 11 of them and
-- the history's limits, about 15,000 redis-server instructions a call: bench/script-ir.ts).
local rareHelpers
local function rare()
  if rareHelpers then return rareHelpers end
--- @include "replaceArtifacts"
--- @include "history"
--- @include "askedKeys"
--- @include "suspects"
  rareHelpers = { artifactsLeftOut = artifactsLeftOut, artifactsNew = artifactsNew, artifactsRewritten = artifactsRewritten, replaceArtifacts = replaceArtifacts,
    mergeArtifacts = mergeArtifacts, appendHistory = appendHistory, questionEntry = questionEntry, askedKeysOf = askedKeysOf,
    askedKeysAdded = askedKeysAdded, keepsSuspects = keepsSuspects }
  return rareHelpers
end

-- The fields of the typed record (record-parse.ts) that other scripts write without a bump of the version (claim-1.lua,
-- takeFollow-2.lua and the handover: fence; noteNoProgress-1.lua; notePushConfig-1.lua; noteSuspect-1.lua's suspects
-- and suspectsLost; noteNotFound-1.lua's two are written back below whenever the row holds them): a caller's copy at
-- the row's version may lack them, so a change reply carries them whenever the row has them. A suspect noted after the caller read the row and
-- before this change finished it is in the record the settle decides from (it waits for the suspects to be read:
-- settle.ts), never dropped unread by the workflow's decision. Only clearSuspects-1.lua deletes one of them
-- (`suspects`): a caller whose copy holds suspects names no version (status.ts) and gets the row whole. (`owner`,
-- `noProgressUnacceptable` and `artifactBytes` are no field of the typed record: a change reply leaves them out.)
-- The suspect round's fields (suspectReadRounds, suspectReadRoundAt, suspectRoundBy, suspectRoundUntil) are written
-- without a bump too and are left out on purpose: only the suspect-read schedule reads them, and claimSuspectRound-1.lua
-- compares and sets them itself (a stale copy is answered with the row's fields, and the job decides again).
-- `artifactCount` is among them too: applyArtifact-2.lua bumps the version, but in applyArtifactThenStatus the held
-- version is moved past that bump (scripts.ts `COMPOSED`), so the caller's copy lacks a count the artifact update
-- raised; the settle decides from the copy (an unsuccessful task carrying artifacts is effect unknown, attack33a).
local FIELDS_UNVERSIONED = { 'fence', 'noProgressMark', 'noProgressSince', 'noProgressCount', 'noProgressLast', 'pushConfigState', 'pushConfigId', 'suspects', 'suspectsLost', 'artifactCount' }
-- The floor of a stretch that followed one without a stamp (below every stamp: the earliest time a JavaScript Date holds).
local FLOOR_UNSTAMPED = '-8640000000000000'
-- How many ids the row's cut of a question's words keeps (`questionWordsAfter`, question-words.ts QUESTION_CUTS_KEPT).
local CUTS_KEPT = 4
-- The unfinished index's member of this delegation (indexMember, keys.ts), for a handover's check.
local member = ''
-- ARGV[14] 'handover:…' read once (endLease.lua), else nil.
local handover = handoverOf(ARGV[14])

local function apply()
  -- The positions of the arguments after the 15 every call sends (see the header), by name: status-scripts.ts
  -- APPLY_STATUS_ARGV holds the same numbers (test/journal/apply-status-argv.test.ts fails when they differ, or when an
  -- ARGV position from 16 on is read here by a number of its own). AT_ARTIFACTS: where a Task's artifact quadruples begin.
  local AT_STATUS_MESSAGE, AT_RESULT, AT_ERROR, AT_NAMED_TASK_UNREAD, AT_STREAM, AT_UNSENT, AT_WORDS_CUT = 16, 17, 18, 19, 20, 21, 22
  local AT_WORDS_ON, AT_ARTIFACT_COUNT, AT_ARTIFACT_BYTES, AT_ARTIFACT_BYTES_LIMIT, AT_ARTIFACTS = 23, 24, 25, 26, 27
  -- The arguments a caller leaves out when they are '' (ARGV[16] on: see the header).
  local statusMessageArg, channel, listed = ARGV[AT_STATUS_MESSAGE] or '', ARGV[AT_STREAM] or '', ARGV[AT_ARTIFACT_COUNT] or ''
  -- One read of the row and one write (every field of the transition in a single HSET). The caller holds the row at
  -- its version: only the fields every transition needs are read (FIELDS_UNVERSIONED among them, and the workflow id a
  -- handover's check names), and the reply is the change. Else the row whole, whose HGETALL reply becomes the row as
  -- written (changed in place, `at`: a field's value's index in `flat`). The HMGET holds the version too: a row at
  -- another version (rare) is read again whole. A field only some transitions need is read when needed (`field`).
  -- The names are constants of the call and the values go into a table constructor (an absent field is nil, never
  -- false): a name list unpacked into the call and a loop filling the table took a third of the read's instructions
  -- (redis-server under callgrind, bench/script-ir.ts). A field costs about 1,000 instructions to read, present or not.
  local whole = ARGV[15] == ''
  local hash, flat, at = {}, {}, {}
  if not whole then
    local v = redis.call('HMGET', KEYS[1], 'delegationId', 'version', 'state', 'statusTimestampMs', 'taskId', 'contextId',
      'questionKey', 'statusMessage', 'clockFloorMs', 'namedTaskUnread', 'workflowId', 'fence', 'noProgressMark',
      'noProgressSince', 'noProgressCount', 'noProgressLast', 'pushConfigState', 'pushConfigId', 'suspects', 'suspectsLost',
      'notFoundCount', 'firstNotFoundAt', 'statusStream', 'artifactCount')
    whole = tonumber(v[2]) ~= tonumber(ARGV[15])
    if not whole then
      hash = { delegationId = v[1] or nil, version = v[2] or nil, state = v[3] or nil, statusTimestampMs = v[4] or nil,
        taskId = v[5] or nil, contextId = v[6] or nil, questionKey = v[7] or nil, statusMessage = v[8] or nil,
        clockFloorMs = v[9] or nil, namedTaskUnread = v[10] or nil, workflowId = v[11] or nil, fence = v[12] or nil,
        noProgressMark = v[13] or nil, noProgressSince = v[14] or nil, noProgressCount = v[15] or nil,
        noProgressLast = v[16] or nil, pushConfigState = v[17] or nil, pushConfigId = v[18] or nil, suspects = v[19] or nil,
        suspectsLost = v[20] or nil, notFoundCount = v[21] or nil, firstNotFoundAt = v[22] or nil, statusStream = v[23] or nil,
        artifactCount = v[24] or nil }
    end
  end
  if whole then
    flat = redis.call('HGETALL', KEYS[1])
    for i = 1, #flat, 2 do hash[flat[i]] = flat[i + 1]; at[flat[i]] = i + 1 end
  end
  -- A field the HMGET above leaves out (nil when absent).
  local function field(name)
    if whole then return hash[name] end
    return redis.call('HGET', KEYS[1], name) or nil
  end
  local row = { hash.fence, hash.version, hash.state, hash.statusTimestampMs, hash.taskId, hash.contextId, hash.questionKey, hash.delegationId }
  if not row[8] then return {CODE.DELEGATION_MISSING, 'missing'} end
  if ARGV[1] ~= '' and row[1] ~= ARGV[1] then return {CODE.FENCE_LOST, 'fence'} end
  if ARGV[2] ~= '' and row[2] ~= ARGV[2] then return {CODE.VERSION_CONFLICT, 'version'} end
  local current, incoming, mode = row[3], ARGV[4], ARGV[3]
  if FINISHED[current] then return {0, 'finished'} end
  local knownTask = row[5] or ''
  if ARGV[7] ~= '' and knownTask ~= '' and knownTask ~= ARGV[7] then return {CODE.TASK_MISMATCH, 'task'} end
  -- Nothing of ours was sent (ARGV[21]): only over the row as the run that tried left it.
  local unsent = ARGV[AT_UNSENT] or ''
  if unsent ~= '' then
    local marked = field('sendStartedAt') or ''
    if current ~= 'INTENT' or knownTask ~= '' or marked ~= (unsent == '-' and '' or unsent)
      or rare().keepsSuspects(hash.suspects or false, hash.suspectsLost or false) or (field('refusedResult') or '') ~= '' then
      return {CODE.VERSION_CONFLICT, 'version'}
    end
  end
  local statusMessage = hash.statusMessage or ''
  -- The messageId of a stored message's JSON ('' when none or unreadable).
  local function messageIdOf(json)
    if json == '' then return '' end
    local ok, message = pcall(cjson.decode, json)
    if ok and type(message) == 'table' and type(message.messageId) == 'string' then return message.messageId end
    return ''
  end
  -- Question words cut from the caller's copy of the row (AT_WORDS_ON, question-words.ts `wordsBasisOf`): applied only
  -- when the row as stored gives the same cut, else the status as without a message (its key is the status's alone
  -- either way) and a later read with the row takes the words (review35: a WORKING with a progress message another
  -- writer recorded after the copy was read cut them elsewhere).
  local wordsOn = ARGV[AT_WORDS_ON] or ''
  if wordsOn ~= '' and statusMessageArg ~= '' then
    local basis = ''
    for _, value in ipairs({ current or '', messageIdOf(statusMessage), field('questionWordsAfter') or '', (field('question') or '') ~= '' and '1' or '' }) do
      basis = basis .. #value .. ':' .. value
    end
    if basis ~= wordsOn then statusMessageArg = '' end
  end
  -- A Task's list: the held artifacts it leaves out, read with the change (no push lands between this read and the
  -- write), reported on every outcome below.
  local leftOut, leftOutBytes, listedIds
  if listed ~= '' then leftOut, leftOutBytes, listedIds = rare().artifactsLeftOut(KEYS[2], AT_ARTIFACTS, tonumber(listed)) end

  local currentTs, incomingTs = tonumber(row[4] or ''), tonumber(ARGV[5])
  local floorTs = tonumber(hash.clockFloorMs or '')
  -- Ordered channels: an observation later on the stream that wrote the row's status (ARGV[20]) is the agent's later
  -- word, whatever the stamps of replicas with skewed clocks say (streamorder30: a snapshot WORKING stamped 60 s ahead,
  -- then INPUT_REQUIRED stamped now on the same stream: the question was 'stale', never shown).
  -- A stream that caught up with the row (below) holds the order as '~<id>': its later events are later than the row's
  -- status, but its start is no proof that what it brings next is new to the row (a replica behind the row may bring
  -- the statuses between its snapshot and the row's): a question the row was parked on before is not asked again on
  -- the strength of this order, only by the stamps (`askedLater`).
  local claim = hash.statusStream or ''
  local caughtUp = channel ~= '' and claim == '~' .. channel
  local orderedAfter = mode ~= 'outcome' and channel ~= '' and (claim == channel or caughtUp)
  -- The row's own status again (state, stamp and message: a GetTask showing what the stream said, a resubscription's
  -- snapshot of it): never 'stale', as it shows nothing older; a snapshot of it from a stream gives that stream the order.
  -- A bare re-read of the question the row is parked on (the same parked state, no message: a GetTask or push that
  -- shows the status without the agent's words the row took from its messages, question-words.ts) keeps the words.
  -- The same parked state only (review35: an AUTH_REQUIRED without a message after an INPUT_REQUIRED's question kept
  -- the input question as its own).
  local bareAgain = mode ~= 'outcome' and statusMessageArg == '' and PARKED[incoming] and incoming == current
    and (ARGV[10] == '' or ARGV[10] == (row[7] or ''))
  local agrees = incoming == current and incomingTs == currentTs and (statusMessageArg == statusMessage or bareAgain)
  -- The last agent message this status follows (AT_WORDS_CUT, question-words.ts `wordsCut`): only an unfinished,
  -- unparked status of the agent's has one (a parked one's words are the messages after the cut before it).
  local wordsCut = ARGV[AT_WORDS_CUT] or ''
  if mode == 'outcome' or PARKED[incoming] or FINISHED[incoming] then wordsCut = '' end
  -- The cut's ids this change adds, newest first, merged into the row's below (`questionWordsAfter`, see the header;
  -- no closure: one costs every call).
  local newCuts, cutsTouched = {}, false
  -- The incoming question's key in the old form too (ARGV[11]: rows journaled before keys had a namespace of their own
  -- hold it).
  local legacyKey = ARGV[11]
  local function names(key) return key ~= nil and ARGV[10] ~= '' and (key == ARGV[10] or (legacyKey ~= '' and key == legacyKey)) end
  -- A question by our own ordered facts (ARGV[10] a known key; askedKeys: the keys the row was parked on, oldest
  -- first): 'new' when the row's question has our reply delivered and this key was never asked (the agent asks
  -- again after our reply, whatever its clock says); 'old' when it is a question asked before the row's latest one.
  -- The row's question as the agent keyed it: a key asked again after our answer is kept as '<key>#re<n>' (below; no
  -- agent key holds a '#', so the suffix is ours; a row of the old form may hold an agent's own '#re<n>': read as it is
  -- first).
  local agentKey = row[7] and (row[7]:match('^(.+)#re%d+$') or row[7]) or nil
  local sameKey = names(row[7]) or names(agentKey)
  -- Asked again after our answer (an agent that reuses its status message's ids): our answer to the row's question is
  -- with the agent and this asking is later than the row's status (the answered asking's, or one since) and than the
  -- floor of the stretches before. A read of an earlier asking carries that asking's own stamp, and without a stamp the
  -- two cannot be told apart (the row then stays as it is). After a status that took the row off the question (a
  -- WORKING that followed our answer), a stamp equal to that status's is later too: an earlier asking's stamp is older
  -- than that status's unless the asking, our answer and the WORKING all fall in one tick of the agent's clock (the
  -- limit, docs/people.md). Without this the row parked on a question that counted as answered: open to nobody, the
  -- workflow waiting for ever.
  -- (Read only when needed: a WORKING on a row without a floor reads neither field.)
  local answeredKey, repliedRead
  local function replied()
    if repliedRead == nil then
      answeredKey = field('replyForQuestion')
      repliedRead = row[7] ~= nil and answeredKey == row[7] and field('replyState') == 'sent'
    end
    return repliedRead
  end
  local function askedLater()
    return replied() and incomingTs ~= nil and (floorTs == nil or incomingTs > floorTs)
      and (currentTs == nil or incomingTs > currentTs or (incomingTs == currentTs and not PARKED[current]))
  end
  local asked, newQuestion, reasked = nil, false, false
  if mode ~= 'outcome' and PARKED[incoming] and ARGV[10] ~= '' and not sameKey then
    asked = rare().askedKeysOf(field('askedKeys'))
    if asked.has[ARGV[10]] or (legacyKey ~= '' and asked.has[legacyKey]) then
      -- A key the row was parked on before its latest question: a replay of that asking, unless asked again (above;
      -- with some stamp the row holds to be later than).
      -- Asked again on the stream that wrote the row: a later asking by the stream's order (a key made here, as below).
      if not ((orderedAfter and not caughtUp) or ((currentTs or floorTs) and askedLater())) then return {0, 'stale', leftOut} end
      reasked = true
    else
      -- (A row asked again under an answered key, '<key>#re<n>', is still in the stretch after that answer.)
      replied()
      newQuestion = row[7] ~= nil and (answeredKey == row[7] or answeredKey == agentKey) and field('replyState') == 'sent'
    end
  end
  -- Asked again under the key our delivered answer answered: a new question (its own key, below). It still passes the
  -- clock rules below.
  -- On the stream that wrote the row (its whole order, not one that caught up: above), the row's question after our
  -- delivered answer to it, other than the row's own status, is asked again too (streamorder31: before, it was applied
  -- under the answered key, a question open to nobody).
  local askedAgain = reasked or (mode ~= 'outcome' and PARKED[incoming] and sameKey and (askedLater() or (orderedAfter and not caughtUp and not agrees and replied())))
  -- The row's answered question again on a stream that only caught up with the row: no later asking by that order (a
  -- replica behind replays it), only by the stamps (`askedAgain`).
  local replayed = caughtUp and PARKED[incoming] and sameKey and not askedAgain and replied()
  if mode ~= 'outcome' then
    -- Clocks (R27): a move forward in state order is never vetoed by a timestamp;
    -- timestamps only order observations of the same rank, within one stretch of the task: a new question after our
    -- delivered reply is not (above), and a stamp no later than an earlier stretch's (clockFloorMs) is no proof of
    -- being newer than what that stretch ended on (an agent clock far ahead, or a replay).
    if RANK[incoming] < RANK[current] then return {0, 'regress', leftOut} end
    -- (With a floor, a stamp-less event of that rank proves no order either; with the floor of stretches without stamps
    -- (FLOOR_UNSTAMPED), only while the row is parked on a question our answer has not reached: then a stamp-less
    -- status of the stretch before, replayed, would take the row off an open question. Once our answer is delivered the
    -- agent's own stamp-less statuses are applied in arrival order, as before the floor.)
    local stampless = floorTs and not incomingTs and (hash.clockFloorMs ~= FLOOR_UNSTAMPED or (PARKED[current] and not replied()))
    -- Where the agent's clocks were shown to disagree (a floor from stamps), a stamp proves no order against a status
    -- the journal never saw (streamorder31: a WORKING a replica with a fast clock wrote before the question, missed
    -- between two streams and pushed late, is stamped after every stamp seen). An unordered observation does not take
    -- the row off a question our answer has not reached to a status of the same rank: the agent works on after a
    -- question once it has our answer. Its stream's order, a finished state or a new question still move the row.
    local leavesQuestion = floorTs and hash.clockFloorMs ~= FLOOR_UNSTAMPED and PARKED[current] and not PARKED[incoming] and not replied()
    local refusal
    -- The cut an equal status carries is the row's newest already (`questionWordsAfter`: a JSON list newest first, or
    -- one id as older releases wrote it), or it carries none.
    local knownCut = wordsCut == ''
    if not knownCut and mode == 'event' and incoming == current then
      local held, head = field('questionWordsAfter') or '', '[' .. cjson.encode(wordsCut)
      local after = held:sub(#head + 1, #head + 1)
      knownCut = held == wordsCut or (held:sub(1, #head) == head and (after == ',' or after == ']'))
    end
    if RANK[incoming] == RANK[current] and not newQuestion and not (orderedAfter and not replayed) and not agrees and ((incomingTs and currentTs and incomingTs < currentTs) or (floorTs and incomingTs and incomingTs <= floorTs) or stampless or leavesQuestion) then
      refusal = 'stale'
    -- The same status again (same state, no newer timestamp, the same message) changes nothing; a new message
    -- (another question, another challenge) replaces the status whole even without a timestamp.
    -- A status after a message the row did not know it follows (another cut) is news of an order: applied (A36).
    elseif mode == 'event' and incoming == current and (not incomingTs or incomingTs == currentTs) and (statusMessageArg == statusMessage or bareAgain)
      and knownCut then
      refusal = 'duplicate'
    end
    if refusal then
      -- A stream catching up with the row (streamorder31): an event of a stream that does not hold the order, showing the
      -- row's status (the same state and message) but refused by the rules above (stamped earlier, or the same status
      -- again: a resubscription's snapshot of the task as it is, stamped by a replica whose clock is behind the one that
      -- stamped the row). The stream's events arrive in the agent's order, so the ones after it are later than the row's
      -- status: the stream takes the order ('~<id>', above), nothing else is written (no version bump: `statusStream` is no
      -- field of the typed record), and the refusal stands. A stream whose first event shows another status (one the row
      -- moved past, by the stamps) takes nothing: a replica behind the row would bring next the statuses between the two;
      -- its events are ordered by their stamps until one shows the row's status or is applied.
      -- The row's very status (its stamp too) on a stream that caught up gives it the whole order.
      if channel ~= '' and (not orderedAfter or (caughtUp and agrees)) and incoming == current and (statusMessageArg == statusMessage or bareAgain) then
        redis.call('HSET', KEYS[1], 'statusStream', (agrees and '' or '~') .. channel)
      end
      return {0, refusal, leftOut}
    end
  end

  if ARGV[7] ~= '' and knownTask == '' and ARGV[12] ~= '1' then
    local refused = bindTaskHere(KEYS[4], ARGV[12], function() return field('agentCardUrl') end)
    if refused then return refused end
  end

  local now = ARGV[9]
  local set = { 'state', incoming, 'updatedAt', now }
  local function put(field, value) set[#set + 1] = field; set[#set + 1] = value end
  -- Any applied change ends a run of "task not found" answers (noteNotFound-1.lua, which bumps no version): the count
  -- and its start are written back only when the row holds them (absent reads as 0 and none, record.ts), so the
  -- common change writes and replies two fields fewer. A caller's copy at this version cannot hold a count the row
  -- lacks: only a versioned change resets it.
  if (hash.notFoundCount or '0') ~= '0' or (hash.firstNotFoundAt or '') ~= '' then put('notFoundCount', '0'); put('firstNotFoundAt', '') end
  if incomingTs then put('statusTimestampMs', ARGV[5]); put('statusTimestamp', ARGV[6])
  elseif RANK[incoming] ~= RANK[current] or newQuestion then put('statusTimestampMs', ''); put('statusTimestamp', '') end
  -- A new stretch by our facts (a new question after our delivered reply, or the answered one asked again): its stamps
  -- are not compared with the last one's, whose highest becomes the floor.
  -- A stretch before without a stamp: the floor is below every stamp (FLOOR_UNSTAMPED), so a stamp-less event of the
  -- stretch before replayed later (a WORKING before our answer) does not take the row off this question while it waits
  -- for our answer (the clock rules above).
  if (newQuestion or askedAgain) and currentTs and (not floorTs or currentTs > floorTs) then put('clockFloorMs', row[4])
  elseif (newQuestion or askedAgain) and not currentTs and not floorTs then put('clockFloorMs', FLOOR_UNSTAMPED)
  elseif orderedAfter and currentTs and (not incomingTs or incomingTs < currentTs) and (not floorTs or currentTs > floorTs) then
    -- The stream's order overruled a later stamp: that stamp becomes the floor, so an unordered observation (a late push,
    -- a GetTask that raced the stream, a resubscription's snapshot) must be stamped after every stamp seen to move the
    -- row, and one without a stamp proves no order (the clock rules above).
    put('clockFloorMs', row[4])
  end
  -- The channel that wrote this status ('' = none). An unordered observation that only agrees with the row (the same
  -- state, stamp and message: a GetTask showing what the stream said) leaves the stream's claim to order.
  -- A stream that caught up keeps its order as it took it ('~<id>').
  if mode ~= 'outcome' and channel ~= claim and not caughtUp and not (channel == '' and agrees) then
    put('statusStream', channel)
  end
  if ARGV[7] ~= '' and knownTask == '' then put('taskId', ARGV[7]) end
  if ARGV[8] ~= '' and (row[6] or '') == '' then put('contextId', ARGV[8]) end
  local workflow, finished = {}, {}
  if incoming ~= current then workflow, finished = touchWorkflow(KEYS[1], FINISHED[incoming], now) end
  if PARKED[incoming] then
    -- A key made here: `stem` and the next question number (questionSeq) that names no key the row knows (its question,
    -- the answered and the expired one, the asked keys): a row of the old form may hold an agent's key of this form.
    -- Bounded: the row knows at most ASKED_KEYS_KEPT + 3 keys. (Made only on this path: a closure costs every call.)
    local function keyMade(stem)
      local known = asked or rare().askedKeysOf(field('askedKeys'))
      replied()
      local taken = { [row[7] or ''] = true, [answeredKey or ''] = true, [field('questionExpired') or ''] = true }
      local seq = tonumber(field('questionSeq')) or 0
      for _ = 1, #known.list + 4 do
        seq = seq + 1
        if not (known.has[stem .. seq] or taken[stem .. seq]) then break end
      end
      put('questionSeq', tostring(seq))
      return stem .. seq
    end
    local questionKey = ARGV[10]
    if sameKey then questionKey = row[7] end
    if askedAgain then questionKey = keyMade(ARGV[10] .. '#re') end
    if questionKey == '' then
      questionKey = row[7] or ''
      if not PARKED[current] or questionKey == '' then questionKey = keyMade('#seq') end
    end
    local keptWords = bareAgain and questionKey == (row[7] or '')
    if not keptWords then put('question', statusMessageArg) end
    put('questionKey', questionKey)
    -- A question without words (question-words.ts): the words a later read's history shows come after the message of
    -- the status before it ('-': none), never that message or one before it (a WORKING's progress message, A36).
    if statusMessageArg == '' and not keptWords then newCuts[1] = messageIdOf(statusMessage); cutsTouched = true end
    -- A question's life (expiry, reminders) counts from when it was first journaled.
    if questionKey ~= (row[7] or '') or not PARKED[current] then
      put('questionAskedAt', now)
      -- A refusal (markReply-1.lua: `replyError`) was of an answer to the question before: this one has no answer
      -- yet, so no view or `question.opened` tells its person a previous answer was refused.
      if (field('replyError') or '') ~= '' then put('replyError', '') end
    end
    if not PARKED[current] or questionKey ~= (row[7] or '') then
      rare().appendHistory(workflowBaseOf(KEYS[1]), rare().questionEntry(now, row[8], field('step') or '', incoming, statusMessageArg))
      if ARGV[10] ~= '' then
        local keys = rare().askedKeysAdded(asked or rare().askedKeysOf(field('askedKeys')), ARGV[10])
        if keys then put('askedKeys', keys) end
      end
    end
  elseif mode ~= 'outcome' or FINISHED[incoming] then
    put('question', '')
  end
  -- A TaskStatus from the agent is one value (A36): a status without a message clears the previous one. Our own
  -- outcomes (mode 'outcome') leave it as the agent last sent it.
  if wordsCut ~= '' then newCuts[#newCuts + 1] = wordsCut; cutsTouched = true end
  if statusMessageArg ~= '' then put('statusMessage', statusMessageArg)
  elseif mode ~= 'outcome' and statusMessage ~= '' and not bareAgain then
    put('statusMessage', '')
    -- The message cleared: a later question without words takes the agent's words after it only (question-words.ts).
    -- A finished row asks nothing more: not written (the one-step finish writes the same record without it).
    local cleared = messageIdOf(statusMessage)
    if cleared ~= '' and not FINISHED[incoming] then newCuts[#newCuts + 1] = cleared; cutsTouched = true end
  end
  -- The last agent message this status follows, the message it cleared (or, a question without words, the status
  -- message before it): a later question without words takes only the messages after them. The newest CUTS_KEPT of
  -- these and the row's ('-': none).
  if cutsTouched then
    local held, list, taken = field('questionWordsAfter') or '', {}, {}
    local heldList = { held }
    if held == '' or held == '-' then heldList = {}
    elseif held:sub(1, 1) == '[' then
      local ok, decoded = pcall(cjson.decode, held)
      if ok and type(decoded) == 'table' then heldList = decoded end
    end
    for _, ids in ipairs({ newCuts, heldList }) do
      for _, id in ipairs(ids) do
        if type(id) == 'string' and id ~= '' and not taken[id] and #list < CUTS_KEPT then list[#list + 1] = id; taken[id] = true end
      end
    end
    local cut = '-'
    if #list > 0 then cut = cjson.encode(list) end
    put('questionWordsAfter', cut)
  end
  if (ARGV[AT_RESULT] or '') ~= '' then put('result', ARGV[AT_RESULT]) end
  -- A task a Message answer named, bound unread (ARGV[19]); any status of the agent applied since shows it read.
  if ARGV[AT_NAMED_TASK_UNREAD] == '1' then put('namedTaskUnread', '1')
  elseif mode ~= 'outcome' and hash.namedTaskUnread == '1' then put('namedTaskUnread', '0') end
  if (ARGV[AT_ERROR] or '') ~= '' then put('error', ARGV[AT_ERROR]) end

  -- An unfinished Task's copies written over held ones with other content (review16m): named in the reply.
  local rewritten
  if listed ~= '' then
    local count, merged = tonumber(listed), (tonumber(ARGV[AT_ARTIFACT_BYTES]) or 0) + leftOutBytes
    if not FINISHED[incoming] then rewritten = rare().artifactsRewritten(KEYS[2], AT_ARTIFACTS, count) end
    -- The artifacts shown ('artifactCount', record.ts): the listed ids the row did not hold are new (a replacing list
    -- does not lower the count: what a stream showed before stays shown, attack33a).
    local shown = count > 0 and rare().artifactsNew(KEYS[2], AT_ARTIFACTS, count) or 0
    if shown > 0 then put('artifactCount', tostring((tonumber(hash.artifactCount or '0') or 0) + shown)) end
    local countLimit = tonumber(ARGV[AT_ARTIFACTS + 4 * count] or '')
    if FINISHED[incoming] or (count > 0 and (merged > tonumber(ARGV[AT_ARTIFACT_BYTES_LIMIT]) or (countLimit ~= nil and listedIds + #leftOut > countLimit))) then
      rare().replaceArtifacts(KEYS[2], field('artifactBytes') ~= nil, AT_ARTIFACTS, count)
      put('artifactBytes', ARGV[AT_ARTIFACT_BYTES])
    elseif count > 0 then
      rare().mergeArtifacts(KEYS[2], AT_ARTIFACTS, count, leftOut)
      put('artifactBytes', tostring(merged))
    end
  end

  -- A COMPLETED task whose cut status message is its result (ARGV[28 + 4N]): no artifacts held after the change.
  local overLimit = incoming == 'COMPLETED' and ARGV[AT_ARTIFACTS + 1 + 4 * (tonumber(listed) or 0)] or ''
  if overLimit ~= '' then
    -- A finished Task's list replaces the stored artifacts (above); without one the row holds what it showed.
    local held = listed ~= '' and tonumber(listed) or tonumber(hash.artifactCount or '0') or 0
    if held == 0 then set[2] = 'AMBIGUOUS'; put('error', overLimit) end
  end
  if FINISHED[incoming] then put('finishedAt', now) end
  local version = (tonumber(row[2]) or 0) + 1
  put('version', tostring(version))
  handoverFields(handover, KEYS[3], ARGV[13], incoming, row[1], put)
  redis.call('HSET', KEYS[1], unpack(set))
  if PARKED[incoming] then publishChange(workflowBaseOf(KEYS[1]), incoming) end
  if handover and handover.fence and handover.checkAt ~= '' then member = (hash.workflowId or '') .. '|' .. row[8] end
  if whole then
    for i = 1, #set, 2 do
      local index = at[set[i]]
      if index then flat[index] = set[i + 1]
      else flat[#flat + 1] = set[i]; flat[#flat + 1] = set[i + 1]; at[set[i]] = #flat end
    end
    return {1, version, flat, workflow, finished, 0, 1, leftOut, rewritten}
  end
  -- The change: the unversioned fields the row has, then what this transition wrote (later values win).
  local change = {}
  for _, field in ipairs(FIELDS_UNVERSIONED) do
    if hash[field] then change[#change + 1] = field; change[#change + 1] = hash[field] end
  end
  for i = 1, #set do change[#change + 1] = set[i] end
  return {1, version, change, workflow, finished, 0, 0, leftOut, rewritten}
end

local reply = apply()
endLease(reply, KEYS[1], KEYS[3], KEYS[5], ARGV[13], ARGV[14], ARGV[4], member, handover)
return reply
