import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sameOriginRedirect } from '../../console/src/screens/signin/redirect.ts';

const ORIGIN = 'http://127.0.0.1:8080';

describe('console sign-in redirect', () => {
  it('keeps a path of this origin, with its search and hash', () => {
    assert.equal(sameOriginRedirect('/runs?status=failed#top', ORIGIN), '/runs?status=failed#top');
    assert.equal(sameOriginRedirect('/objects/abc', ORIGIN), '/objects/abc');
  });

  it('refuses anything that leaves the origin', () => {
    for (const raw of [
      'https://evil.example',
      '//evil.example',
      '/\\evil.example',
      '/\t/evil.example',
      '\\\\evil.example',
      'javascript:alert(1)',
      ' https://evil.example',
      '',
    ]) {
      assert.equal(sameOriginRedirect(raw, ORIGIN), undefined, JSON.stringify(raw));
    }
    assert.equal(sameOriginRedirect(42, ORIGIN), undefined);
    assert.equal(sameOriginRedirect(['/runs'], ORIGIN), undefined);
  });

  it('does not loop back to sign-in', () => {
    assert.equal(sameOriginRedirect('/signin?redirect=/runs', ORIGIN), undefined);
  });
});
