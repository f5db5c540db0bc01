/** A bad invocation: printed as one line, exit code 2. */
export class UsageError extends Error {}
