/**
 * Cheap language detection for `metadata.languages`: a heuristic, not a model. The first 20,000
 * characters are split into words; a language is reported when its most common short words
 * ("the", "and", "le", "der", …) make up at least 8% of the words (a second language when its own
 * words, those of two letters or more not shared with the first, number 10 and make up 5%:
 * bilingual text). Scripts without such a list are named by their Unicode script (Cyrillic
 * → ru, Greek → el, Arabic → ar, Hebrew → he, Hangul → ko, kana → ja, Han without kana → zh).
 * Answers ISO 639-1 codes, most likely first; nothing when unsure (under 20 words).
 */
import { table } from '../util/own.ts';
const STOPWORDS: Record<string, string[]> = table({
  en: [
    'the',
    'and',
    'of',
    'to',
    'in',
    'is',
    'that',
    'it',
    'for',
    'was',
    'on',
    'with',
    'as',
    'are',
    'be',
    'this',
    'by',
    'at',
    'or',
    'from',
    'have',
    'not',
    'but',
    'an',
    'they',
    'which',
    'you',
    'we',
    'his',
    'her',
  ],
  fr: [
    'le',
    'la',
    'les',
    'de',
    'des',
    'et',
    'un',
    'une',
    'est',
    'que',
    'qui',
    'dans',
    'pour',
    'pas',
    'sur',
    'au',
    'du',
    'par',
    'ne',
    'se',
    'il',
    'elle',
    'nous',
    'vous',
    'sont',
    'avec',
    'ce',
    'cette',
    'aux',
    'mais',
  ],
  de: [
    'der',
    'die',
    'das',
    'und',
    'ist',
    'nicht',
    'mit',
    'den',
    'von',
    'zu',
    'ein',
    'eine',
    'auf',
    'sich',
    'dem',
    'des',
    'im',
    'für',
    'auch',
    'es',
    'wird',
    'sind',
    'wir',
    'ich',
    'sie',
    'oder',
    'aber',
    'bei',
    'nach',
    'dass',
  ],
  es: [
    'el',
    'la',
    'los',
    'las',
    'de',
    'y',
    'que',
    'en',
    'un',
    'una',
    'es',
    'por',
    'con',
    'para',
    'no',
    'se',
    'del',
    'al',
    'lo',
    'como',
    'más',
    'pero',
    'sus',
    'su',
    'ha',
    'muy',
    'sin',
    'sobre',
    'este',
    'entre',
  ],
  it: [
    'il',
    'di',
    'che',
    'e',
    'la',
    'per',
    'un',
    'una',
    'non',
    'sono',
    'gli',
    'le',
    'del',
    'della',
    'con',
    'da',
    'si',
    'nel',
    'alla',
    'anche',
    'come',
    'più',
    'ma',
    'questo',
    'ha',
    'dei',
    'delle',
    'lo',
    'ci',
    'essere',
  ],
  pt: [
    'o',
    'a',
    'os',
    'as',
    'de',
    'e',
    'que',
    'do',
    'da',
    'em',
    'um',
    'uma',
    'para',
    'com',
    'não',
    'por',
    'mais',
    'dos',
    'das',
    'se',
    'na',
    'no',
    'ao',
    'como',
    'mas',
    'foi',
    'ele',
    'ela',
    'são',
    'também',
  ],
  nl: [
    'de',
    'het',
    'een',
    'en',
    'van',
    'is',
    'dat',
    'op',
    'te',
    'in',
    'zijn',
    'voor',
    'met',
    'niet',
    'aan',
    'er',
    'ook',
    'als',
    'maar',
    'bij',
    'door',
    'wordt',
    'nog',
    'naar',
    'om',
    'deze',
    'dit',
    'wij',
    'ze',
    'hij',
  ],
});

const SETS = Object.fromEntries(Object.entries(STOPWORDS).map(([k, v]) => [k, new Set(v)]));

const SCRIPTS: Array<[string, RegExp]> = [
  ['ru', /\p{Script=Cyrillic}/u],
  ['el', /\p{Script=Greek}/u],
  ['ar', /\p{Script=Arabic}/u],
  ['he', /\p{Script=Hebrew}/u],
  ['ko', /\p{Script=Hangul}/u],
  ['ja', /[\p{Script=Hiragana}\p{Script=Katakana}]/u],
  ['zh', /\p{Script=Han}/u],
  ['th', /\p{Script=Thai}/u],
  ['hi', /\p{Script=Devanagari}/u],
];

export function detectLanguages(text: string): string[] {
  const sample = text.slice(0, 20_000);
  const letters = sample.match(/\p{L}/gu)?.length ?? 0;
  if (letters < 20) return [];
  const found: Array<[string, number]> = [];
  // Non-Latin scripts: by their share of the letters.
  for (const [lang, re] of SCRIPTS) {
    const n = sample.match(new RegExp(re.source, 'gu'))?.length ?? 0;
    if (n / letters >= 0.2) found.push([lang, n / letters]);
  }
  if (found.some(([l]) => l === 'ja')) {
    // Japanese mixes Han with kana; Han alone is Chinese.
    const i = found.findIndex(([l]) => l === 'zh');
    if (i >= 0) found.splice(i, 1);
  }
  const words = sample.toLowerCase().match(/\p{L}+/gu) ?? [];
  if (words.length >= 20) {
    const scores = Object.entries(SETS)
      .map(([lang, set]) => [lang, words.filter((w) => set.has(w)).length / words.length] as [string, number])
      .sort((a, b) => b[1] - a[1]);
    const best = scores[0];
    if (best[1] >= 0.08) {
      found.push(best);
      // A second language counts only by its own words (French and Spanish share "de", "la", "que").
      const own = scores
        .slice(1)
        .map(([lang]) => {
          const set = SETS[lang];
          return [lang, words.filter((w) => w.length > 1 && set.has(w) && !SETS[best[0]].has(w)).length] as [
            string,
            number,
          ];
        })
        .sort((a, b) => b[1] - a[1])[0];
      if (own && own[1] >= 10 && own[1] / words.length >= 0.05) found.push([own[0], own[1] / words.length]);
    }
  }
  return found.sort((a, b) => b[1] - a[1]).map(([l]) => l);
}
