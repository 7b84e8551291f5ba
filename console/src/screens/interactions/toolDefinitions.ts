/**
 * The playground's tools, as typed in its JSON editor: checked here before anything is sent,
 * with the rules POST /runs applies to tool_definitions (name pattern, at most 128, an object
 * input_schema), so a mistake is shown at the field instead of coming back as a 400.
 */
interface ToolDefinition {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
}

const MAX_TOOLS = 128;
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const KEYS = new Set(['name', 'description', 'input_schema']);

export type ParsedTools = { tools: ToolDefinition[]; error?: undefined } | { tools?: undefined; error: string };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Empty text is no tools; anything else must be a JSON array of tool definitions. */
export function parseTools(text: string): ParsedTools {
  if (!text.trim()) return { tools: [] };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { error: `not valid JSON: ${(err as Error).message}` };
  }
  if (!Array.isArray(value)) return { error: 'must be a JSON array of tools ([{"name": …, "input_schema": …}])' };
  if (value.length > MAX_TOOLS) return { error: `at most ${MAX_TOOLS} tools (there are ${value.length})` };
  const seen = new Set<string>();
  for (const [i, t] of value.entries()) {
    const at = `tool ${i + 1}`;
    if (!isObject(t)) return { error: `${at} must be an object` };
    const unknown = Object.keys(t).filter((k) => !KEYS.has(k));
    if (unknown.length)
      return { error: `${at} has unknown field ${unknown.join(', ')}; a tool has name, description, input_schema` };
    if (typeof t.name !== 'string' || !NAME.test(t.name))
      return { error: `${at}: name must be 1 to 64 letters, digits, _ or -` };
    if (seen.has(t.name)) return { error: `${at}: the name ${t.name} is used twice` };
    seen.add(t.name);
    if (t.description !== undefined && typeof t.description !== 'string')
      return { error: `${at} (${t.name}): description must be a string` };
    if (!isObject(t.input_schema)) return { error: `${at} (${t.name}): input_schema must be a JSON Schema object` };
    if (t.input_schema.type !== undefined && t.input_schema.type !== 'object')
      return { error: `${at} (${t.name}): input_schema must have type "object"` };
  }
  return { tools: value as ToolDefinition[] };
}
