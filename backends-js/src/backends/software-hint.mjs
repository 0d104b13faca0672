// What a refusal of a software adapter tells the user to do: one text for every backend. The
// runtime option `softwareHint` replaces it where the caller has its own switch (the
// playground's "Allow software adapters" checkbox), so the page never says "pass allowSoftware".

/** The default, for code that creates the runtime itself. */
export const SOFTWARE_HINT = 'pass allowSoftware: true to createRuntime to use it';

/** The hint in the given options, else the default. @param {{softwareHint?: string}} [opts] */
export const softwareHint = (opts) => opts?.softwareHint || SOFTWARE_HINT;
