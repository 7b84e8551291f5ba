export function startOptionsOf(checkout: string): string[] | undefined;
