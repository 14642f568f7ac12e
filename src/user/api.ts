import type { ClientContext } from '../core/context.js';

/** The owner of the client's token (`GET v1/user`): the named API user of an API token, the studio user of a studio token. */
export interface User {
  id: number;
  email: string;
  firstName: string;
  lastName: string;
  fullName: string;
}

export interface Organization {
  id: number;
  name: string;
  /** Files (entry files, media) uploaded now are stored encrypted. */
  encryption: boolean;
}

/** Client.User: who the token is, and the organizations it works in (API or studio token). */
export interface UserApi {
  get(): Promise<User>;
  organizations(): Promise<Organization[]>;
}

export const createUserApi = ({ http }: ClientContext): UserApi => ({
  get: async () => (await http.request<{ user: User }>('GET', 'v1/user')).user,
  organizations: async () => (await http.request<{ organizations: Organization[] }>('GET', 'v1/organizations')).organizations,
});
