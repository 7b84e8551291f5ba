import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { splitTemplateLiteral } from '../../src/templates/jst-splitter.ts';

describe('splitTemplateLiteral', () => {
  it('splits text and expressions, with the offset of each expression source', () => {
    const content = 'Hi ${name}!\n${ items.map(i => `${i}`).join("}") } end';
    assert.deepEqual(splitTemplateLiteral(content), [
      { kind: 'text', text: 'Hi ' },
      { kind: 'expr', source: 'name', offset: 5 },
      { kind: 'text', text: '!\n' },
      { kind: 'expr', source: ' items.map(i => `${i}`).join("}") ', offset: 14 },
      { kind: 'text', text: ' end' },
    ]);
    assert.equal(content.slice(14, 14 + 5), ' item');
  });

  it('balances object braces inside an expression', () => {
    assert.deepEqual(splitTemplateLiteral('${ {a: {b: 1}} }x'), [
      { kind: 'expr', source: ' {a: {b: 1}} ', offset: 2 },
      { kind: 'text', text: 'x' },
    ]);
  });

  it('cooks escapes in the text and merges them with the surrounding text', () => {
    assert.deepEqual(splitTemplateLiteral('a\\${b}\\`c\\u00e9'), [{ kind: 'text', text: 'a${b}`cé' }]);
  });

  it('returns nothing for empty content', () => {
    assert.deepEqual(splitTemplateLiteral(''), []);
  });
});
