/** The API version shown in the OpenAPI document. */
export const API_VERSION = '0.1.0';
