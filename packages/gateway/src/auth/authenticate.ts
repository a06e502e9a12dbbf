import type { Request } from 'express';

// The contract between the gateway and an authenticator: the options name it, `auth/` implements
// it, the lanes read its result.

/** Who sent a request: sessions are bound to the subject; tools see it. */
export interface AuthResult {
  /** The authenticated subject a session is bound to. */
  subject: string;
  /** The bearer token as presented (tools may pass it on, as the SDK's `authInfo.token`). */
  token?: string;
  /** The OAuth client the token was issued to (`client_id`, else `azp`), when it says. */
  clientId?: string;
  /** Scopes granted to the token, when it says. */
  scopes?: readonly string[];
  /** Seconds since the epoch at which the token expires, when it says. */
  expiresAt?: number;
}

/** Resolves the subject of a request, or undefined to answer 401. */
export type Authenticate = (req: Request) => Promise<AuthResult | undefined>;
