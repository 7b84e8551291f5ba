import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChatMessage } from '../../src/providers/driver.ts';
import {
  assertSameRun,
  conversationOf,
  readConversation,
  type ConversationBounds,
} from '../../src/conversations/conversation.ts';
import { answerMessage, rebuildHistory, type StoredTurn } from '../../src/conversations/history.ts';
import { callsOf, matchToolResults } from '../../src/conversations/tool-results.ts';
import { readStripOptions, stripHistory } from '../../src/conversations/strip.ts';

const BOUNDS: ConversationBounds = { maxTurns: 200, maxBytes: 8 * 1024 ** 2 };
const rejectsWith = (status: number, code: string, text: RegExp) => (e: any) => {
  assert.equal(e.status, status, e.message);
  assert.equal(e.code, code);
  assert.match(e.message, text);
  return true;
};

/** A chain of runs r1 … rN: a user question, a call, its result, then an answer. */
function chain(n: number): Map<string, StoredTurn> {
  const runs = new Map<string, StoredTurn>();
  for (let t = 1; t <= n; t++) {
    const input: ChatMessage[] =
      t === 1
        ? [{ role: 'user', content: 'q1' }]
        : t % 2 === 0
          ? [{ role: 'tool', content: [{ type: 'tool_result', tool_use_id: `c${t - 1}`, content: `r${t - 1}` }] }]
          : [{ role: 'user', content: `q${t}` }];
    const answer =
      t % 2 === 1
        ? answerMessage('', [{ id: `c${t}`, tool_name: 'look', tool_input: { n: t } }])
        : answerMessage(`a${t}`, undefined);
    runs.set(`r${t}`, { id: `r${t}`, turn: t, input, answer, ...(t > 1 ? { previous_run: `r${t - 1}` } : {}) });
  }
  return runs;
}
const loaderOf = (runs: Map<string, StoredTurn>) => async (id: string) => runs.get(id);

describe('the conversation object', () => {
  it('true starts one, absent/null/false keeps none, an object is read and checked', () => {
    assert.deepEqual(readConversation(true, BOUNDS), { kind: 'start' });
    for (const v of [undefined, null, false]) assert.deepEqual(readConversation(v, BOUNDS), { kind: 'none' });
    const c = { orrery_conversation: 1, run: 'r2', turns: 2, messages: [{ role: 'user', content: 'hi' }] };
    assert.deepEqual(readConversation(c, BOUNDS), { kind: 'continue', conversation: c });
  });

  it('refuses what this server did not make, with a 400 that says what to pass', () => {
    const bad: Array<[unknown, RegExp]> = [
      ['yes', /must be true or an object/],
      [{ run: 'r1', turns: 1 }, /no orrery_conversation version/],
      [{ orrery_conversation: 2, run: 'r1', turns: 1 }, /has version 2; this server reads version 1/],
      [{ orrery_conversation: 1, turns: 1 }, /needs run/],
      [{ orrery_conversation: 1, run: 'r1', turns: 0 }, /needs turns/],
      [{ orrery_conversation: 1, run: 'r1', turns: 1, messages: 'x' }, /conversation\.messages must be a list/],
      [
        { orrery_conversation: 1, run: 'r1', turns: 1, messages: [{ role: 'robot', content: 'x' }] },
        /conversation\.messages\[0\] must be a message whose role is/,
      ],
      [
        {
          orrery_conversation: 1,
          run: 'r1',
          turns: 1,
          messages: [{ role: 'tool', content: [{ type: 'tool_result' }] }],
        },
        /conversation\.messages\[0\]\.content\[0\] \(tool_result\) needs tool_use_id/,
      ],
    ];
    for (const [v, text] of bad)
      assert.throws(() => readConversation(v, BOUNDS), rejectsWith(400, 'bad_request', text));
  });

  it('a conversation past the turn or byte bound is a 413 conversation_too_long naming the limit', () => {
    assert.throws(
      () => readConversation({ orrery_conversation: 1, run: 'r', turns: 201 }, BOUNDS),
      rejectsWith(413, 'conversation_too_long', /201 turns, past the limit of 200 \(ORRERY_CONVERSATION_MAX_TURNS\)/),
    );
    const big = { orrery_conversation: 1, run: 'r', turns: 1, messages: [{ role: 'user', content: 'x'.repeat(2000) }] };
    assert.throws(
      () => readConversation(big, { maxTurns: 200, maxBytes: 1000 }),
      rejectsWith(413, 'conversation_too_long', /past the limit of 1000 \(ORRERY_CONVERSATION_MAX_BYTES\)/),
    );
  });

  it('a conversation that names another run than the request is a 409', () => {
    assert.throws(
      () => assertSameRun({ orrery_conversation: 1, run: 'r1', turns: 1 }, 'r2'),
      rejectsWith(409, 'conversation_mismatch', /conversation\.run is r1 but the request continues run r2/),
    );
    assert.doesNotThrow(() => assertSameRun({ orrery_conversation: 1, run: 'r2', turns: 1 }, 'r2'));
  });

  it('an answer carries the history only while it fits the byte bound', () => {
    const history: ChatMessage[] = [{ role: 'user', content: 'x'.repeat(100) }];
    assert.deepEqual(conversationOf('r1', 1, history, BOUNDS), {
      orrery_conversation: 1,
      run: 'r1',
      turns: 1,
      messages: history,
    });
    assert.deepEqual(conversationOf('r1', 1, history, { maxTurns: 200, maxBytes: 50 }), {
      orrery_conversation: 1,
      run: 'r1',
      turns: 1,
    });
  });
});

describe('history rebuilt from a chain of runs', () => {
  it('walks back to the first run and gives the messages in order', async () => {
    const h = await rebuildHistory('r3', loaderOf(chain(3)), BOUNDS);
    assert.deepEqual(
      h.turns.map((t) => t.id),
      ['r1', 'r2', 'r3'],
    );
    assert.deepEqual(h.messages, [
      { role: 'user', content: 'q1' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'c1', tool_name: 'look', tool_input: { n: 1 } }] },
      { role: 'tool', content: [{ type: 'tool_result', tool_use_id: 'c1', content: 'r1' }] },
      { role: 'assistant', content: 'a2' },
      { role: 'user', content: 'q3' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'c3', tool_name: 'look', tool_input: { n: 3 } }] },
    ]);
    const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));
    assert.equal(
      h.bytes,
      h.turns.reduce((n, t) => n + bytes(t.input) + bytes(t.answer), 0),
    );
  });

  it('a run missing from the chain is a 409 that names the lost turn', async () => {
    const runs = chain(4);
    runs.delete('r2');
    await assert.rejects(
      rebuildHistory('r4', loaderOf(runs), BOUNDS),
      rejectsWith(
        409,
        'conversation_turn_lost',
        /the history of run r4 lost turn 2: run r2, which run r3 continues, no longer exists/,
      ),
    );
    const broken = chain(2);
    broken.set('r2', { ...broken.get('r2')!, turn: 5 });
    await assert.rejects(
      rebuildHistory('r2', loaderOf(broken), BOUNDS),
      rejectsWith(409, 'conversation_turn_lost', /lost its start|where turn/),
    );
  });

  it('a chain past the turn bound, or the byte bound, is a 413 before it is all read', async () => {
    const runs = chain(10);
    let loads = 0;
    const counting = async (id: string) => {
      loads++;
      return runs.get(id);
    };
    await assert.rejects(
      rebuildHistory('r10', counting, { maxTurns: 4, maxBytes: BOUNDS.maxBytes }),
      rejectsWith(413, 'conversation_too_long', /5 turns, past the limit of 4/),
    );
    assert.equal(loads, 5, 'stops at the first turn past the bound');
    await assert.rejects(
      rebuildHistory('r10', loaderOf(runs), { maxTurns: 200, maxBytes: 300 }),
      rejectsWith(413, 'conversation_too_long', /ORRERY_CONVERSATION_MAX_BYTES/),
    );
  });
});

describe('tool results matched to the calls', () => {
  const answer = answerMessage('Looking.', [
    { id: 'call_1', tool_name: 'weather', tool_input: {} },
    { id: 'call_2', tool_name: 'time', tool_input: {} },
  ]);

  it('every call answered once gives one tool message in the order of the calls', () => {
    const calls = callsOf(answer);
    assert.deepEqual(
      matchToolResults('run1', calls, [
        { tool_use_id: 'call_2', content: 'noon', is_error: false },
        { tool_use_id: 'call_1', content: 'down', is_error: true },
      ]),
      {
        role: 'tool',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: 'down', is_error: true },
          { type: 'tool_result', tool_use_id: 'call_2', content: 'noon' },
        ],
      },
    );
  });

  it('an unknown id, a second result, a missing result or a run without calls is a 400 that names it', () => {
    const calls = callsOf(answer);
    const r = (id: string) => ({ tool_use_id: id, content: 'x', is_error: false });
    assert.throws(
      () => matchToolResults('run1', calls, [r('call_1'), r('call_9')]),
      rejectsWith(
        400,
        'bad_request',
        /results\[1\]\.tool_use_id "call_9" names no call of run run1; its calls are call_1, call_2/,
      ),
    );
    assert.throws(
      () => matchToolResults('run1', calls, [r('call_1'), r('call_1'), r('call_2')]),
      rejectsWith(400, 'bad_request', /results\[1\] answers call call_1 a second time/),
    );
    assert.throws(
      () => matchToolResults('run1', calls, [r('call_1')]),
      rejectsWith(400, 'bad_request', /no result for call call_2 \(time\) of run run1/),
    );
    assert.throws(
      () => matchToolResults('run0', callsOf(answerMessage('plain', undefined)), [r('call_1')]),
      rejectsWith(400, 'bad_request', /run run0 asked for no tool calls/),
    );
  });
});

describe('strip_options', () => {
  const turn = (t: number, input: ChatMessage[]): StoredTurn => ({ id: `r${t}`, turn: t, input });
  const img: ChatMessage = {
    role: 'user',
    content: [
      { type: 'text', text: 'look' },
      { type: 'image', url: 'https://example.com/a.png' },
    ],
  };
  const beat: ChatMessage = { role: 'user', content: '<heartbeat>working</heartbeat>' };

  it('without options nothing is stripped', () => {
    assert.deepEqual(stripHistory([turn(1, [img, beat])], 10, undefined), [img, beat]);
  });

  it('images older than images_after_turns become a placeholder; 0 strips them after their turn', () => {
    const turns = [turn(1, [img]), turn(3, [img])];
    const at4 = stripHistory(turns, 4, { images_after_turns: 2 });
    assert.deepEqual((at4[0].content as any[])[1], { type: 'text', text: '[Image removed from conversation history]' });
    assert.deepEqual((at4[1].content as any[])[1], { type: 'image', url: 'https://example.com/a.png' });
    const at2 = stripHistory([turn(1, [img])], 2, { images_after_turns: 0 });
    assert.equal((at2[0].content as any[])[1].type, 'text');
    // The default when strip_options is given: 5 turns.
    assert.equal((stripHistory([turn(1, [img])], 6, {})[0].content as any[])[1].type, 'image');
    assert.equal((stripHistory([turn(1, [img])], 7, {})[0].content as any[])[1].type, 'text');
  });

  it('heartbeats keep only the most recent by default; text_max_tokens cuts earlier text with a marker', () => {
    const out = stripHistory([turn(1, [beat]), turn(2, [beat])], 3, {});
    assert.deepEqual(
      out.map((m) => m.content),
      ['[Heartbeat removed from conversation history]', '<heartbeat>working</heartbeat>'],
    );
    const long: ChatMessage = {
      role: 'tool',
      content: [{ type: 'tool_result', tool_use_id: 'c1', content: 'abcdefghijkl' }],
    };
    const cut = stripHistory([turn(1, [long]), turn(2, [long])], 2, { text_max_tokens: 2 });
    assert.equal((cut[0].content as any[])[0].content, 'abcdefgh\n\n[Content truncated - exceeded token limit]');
    assert.equal((cut[1].content as any[])[0].content, 'abcdefghijkl', 'the turn being sent is left whole');
  });

  it('options that are not numbers from 0, or unknown, are a 400 naming them', () => {
    assert.deepEqual(readStripOptions({ images_after_turns: 0 }), { images_after_turns: 0 });
    assert.throws(
      () => readStripOptions({ images_after_turns: -1 }),
      /strip_options\.images_after_turns must be a number from 0/,
    );
    assert.throws(() => readStripOptions({ keep: 1 }), /strip_options\.keep is not an option/);
  });
});
