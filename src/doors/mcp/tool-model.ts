/** What a tool of the MCP door is: its MCP definition, the permission a call needs, and its call. */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../../auth/principal.ts';
import type { Permission } from '../../auth/permissions.ts';
import type { CallerInfo } from '../../runs/plan.ts';

export type ToolAnswer = CallToolResult;

export interface BuiltInTool {
  definition: Tool;
  /** What the caller's role must allow to see and call it. */
  permission: Permission;
  call(p: Principal, args: unknown, caller: CallerInfo): Promise<ToolAnswer>;
}
