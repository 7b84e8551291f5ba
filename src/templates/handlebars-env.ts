/**
 * The one Handlebars environment of prompt templates, on the server's thread (rendering) and in
 * the template worker (compiling): stock Handlebars (HTML escaping, non-strict: a missing value
 * renders empty, its prototype-access guards at their safe defaults) with the prompt helpers.
 * `log` renders nothing, as stock Handlebars renders it, but writes nothing either: a template
 * must not write to the server's console.
 */
import Handlebars from 'handlebars';
import { PROMPT_HELPERS } from './handlebars-helpers.ts';

export const env = Handlebars.create();
env.registerHelper('log', () => '');
for (const [name, helper] of Object.entries(PROMPT_HELPERS)) env.registerHelper(name, helper);

/** Helpers a template may call: Handlebars' own block helpers and the prompt helpers. */
export const KNOWN_HELPERS: readonly string[] = Object.keys(env.helpers);
