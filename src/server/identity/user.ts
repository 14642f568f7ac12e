import type { TokenRecord } from '../store/identity.js';

/** `GET v1/user`: the identity behind a token (docs/decisions.md, "The user of a token"). */
export interface TokenUser {
  id: number;
  email: string;
  firstName: string;
  lastName: string;
  fullName: string;
}

/**
 * Every API or studio token has an owner: the named API user of an API token, the studio user of a studio
 * token. The backend keeps no separate user table: the owner is the token's own record. Its id is the token id
 * (the `userId` that data source versions record for the token's changes), its name the token's name, and its
 * e-mail an address of the reserved `.invalid` domain that names the token kind and id (it never receives mail).
 */
export function userOfToken(token: Pick<TokenRecord, 'id' | 'kind' | 'name'>): TokenUser {
  const name = token.name.trim() !== '' ? token.name.trim() : token.kind === 'studio' ? 'Studio user' : 'API user';
  return { id: token.id, email: `${token.kind}-token-${token.id}@users.invalid`, firstName: name, lastName: '', fullName: name };
}
