/** The signed-in end user, when the screen knows one. */
export interface ClientUser {
  id?: number | string;
  email?: string;
  [key: string]: unknown;
}
