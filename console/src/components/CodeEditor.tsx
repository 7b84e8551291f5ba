/**
 * CodeMirror 6 in a React component. Controlled-ish: `value` is applied when it differs from the
 * editor's text (so typing does not reset the cursor); `onChange` gets every edit.
 * Languages: json, javascript (jst templates), handlebars ({{…}} highlighted), text.
 */
import { useEffect, useRef } from 'react';
import { Compartment, EditorState, type Extension } from '@codemirror/state';
import {
  EditorView,
  keymap,
  lineNumbers,
  highlightActiveLine,
  drawSelection,
  placeholder as placeholderExt,
} from '@codemirror/view';
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import {
  bracketMatching,
  foldGutter,
  foldKeymap,
  indentOnInput,
  syntaxHighlighting,
  defaultHighlightStyle,
  StreamLanguage,
} from '@codemirror/language';
import { json } from '@codemirror/lang-json';
import { javascript } from '@codemirror/lang-javascript';

export type EditorLanguage = 'json' | 'javascript' | 'handlebars' | 'text';

/** Handlebars/mustache: `{{…}}`, `{{#block}}`, `{{!comment}}` are tokens; the rest is text. */
const handlebars = StreamLanguage.define<{ inTag: boolean; comment: boolean }>({
  name: 'handlebars',
  startState: () => ({ inTag: false, comment: false }),
  token(stream, state) {
    if (state.comment) {
      if (stream.skipTo('}}')) {
        stream.match('}}');
        state.comment = false;
      } else stream.skipToEnd();
      return 'comment';
    }
    if (!state.inTag) {
      if (stream.match('{{!')) {
        state.comment = true;
        return 'comment';
      }
      if (stream.match(/^\{\{\{?[#/^>&~]?/)) {
        state.inTag = true;
        return 'bracket';
      }
      while (!stream.eol() && !stream.match('{{', false)) stream.next();
      return null;
    }
    if (stream.match(/^~?\}\}\}?/)) {
      state.inTag = false;
      return 'bracket';
    }
    if (stream.eatSpace()) return null;
    if (stream.match(/^"(?:[^"\\]|\\.)*"/) || stream.match(/^'(?:[^'\\]|\\.)*'/)) return 'string';
    if (stream.match(/^-?\d+(\.\d+)?/)) return 'number';
    if (stream.match(/^(if|else|each|unless|with|lookup|log)\b/)) return 'keyword';
    if (stream.match(/^[\w.@/$-]+=/)) return 'attributeName';
    if (stream.match(/^[\w.@/$[\]-]+/)) return 'variableName';
    stream.next();
    return null;
  },
});

const languageOf = (lang: EditorLanguage): Extension =>
  lang === 'json' ? json() : lang === 'javascript' ? javascript() : lang === 'handlebars' ? handlebars : [];

export interface CodeEditorProps {
  value: string;
  onChange?: (value: string) => void;
  language?: EditorLanguage;
  /** Accessible name of the editing area. */
  label: string;
  readOnly?: boolean;
  placeholder?: string;
  /** CSS min-height of the editor. */
  minHeight?: string;
  id?: string;
}

export function CodeEditor({
  value,
  onChange,
  language = 'text',
  label,
  readOnly = false,
  placeholder,
  minHeight = '8rem',
  id,
}: CodeEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const lang = useRef(new Compartment());
  const ro = useRef(new Compartment());
  const change = useRef(onChange);
  change.current = onChange;

  useEffect(() => {
    const v = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: value,
        extensions: [
          lineNumbers(),
          foldGutter(),
          history(),
          drawSelection(),
          indentOnInput(),
          bracketMatching(),
          highlightActiveLine(),
          syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
          keymap.of([...defaultKeymap, ...historyKeymap, ...foldKeymap, indentWithTab]),
          EditorView.lineWrapping,
          EditorView.contentAttributes.of({ 'aria-label': label, ...(id ? { id } : {}) }),
          EditorView.theme({ '&': { minHeight }, '.cm-scroller': { minHeight } }),
          placeholder ? placeholderExt(placeholder) : [],
          lang.current.of(languageOf(language)),
          ro.current.of([EditorState.readOnly.of(readOnly), EditorView.editable.of(!readOnly)]),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) change.current?.(u.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = v;
    return () => v.destroy();
    // The editor is made once; the props below are applied by the effects that follow.
  }, []); // deps chosen on purpose: not every value read

  useEffect(() => {
    const v = view.current;
    if (v && v.state.doc.toString() !== value)
      v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } });
  }, [value]);
  useEffect(() => {
    view.current?.dispatch({ effects: lang.current.reconfigure(languageOf(language)) });
  }, [language]);
  useEffect(() => {
    view.current?.dispatch({
      effects: ro.current.reconfigure([EditorState.readOnly.of(readOnly), EditorView.editable.of(!readOnly)]),
    });
  }, [readOnly]);

  return <div className="code-editor" ref={host} data-language={language} />;
}
