// `@ekanos/sdk/integration`: what action handlers (not tools) use, as the seed's note says.

/** Thrown by an action handler: its message reaches the user verbatim instead of "Action failed.". */
export class PublicActionError extends Error {
  override name = 'PublicActionError';
  code?: string;
  constructor(message: string, options?: { code?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    if (options?.code !== undefined) this.code = options.code;
  }
}
