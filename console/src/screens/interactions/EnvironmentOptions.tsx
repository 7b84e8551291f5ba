/** The `<option>`s of an environment chooser: "name (provider)", valued by id. */
import type { Environment } from './model.ts';

export function EnvironmentOptions({ environments }: { environments: Environment[] | undefined }) {
  return (
    <>
      {environments?.map((e) => (
        <option key={e.id} value={e.id}>
          {e.name} ({e.provider})
        </option>
      ))}
    </>
  );
}
