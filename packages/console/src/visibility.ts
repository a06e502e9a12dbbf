/** What one viewer of the console may see: everything (no authentication), or one subject's. */
export type Visibility = { readonly all: true } | { readonly all: false; readonly subject: string };
