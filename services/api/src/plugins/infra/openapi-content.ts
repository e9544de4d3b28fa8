/**
 * Responses with more than one media type in the OpenAPI document. A route
 * declares them the way Fastify does (`{ content: { [mediaType]: { schema } } }`,
 * so each media type gets its own serializer); fastify-type-provider-zod's
 * transform only takes one zod schema per status, so these are converted here.
 */
import { z } from 'zod';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';

/** A response declared per media type. */
export interface ContentResponse {
  description: string;
  content: Record<string, { schema: z.ZodType }>;
}

function isContentResponse(r: unknown): r is ContentResponse {
  return typeof r === 'object' && r !== null && 'content' in r && typeof (r as { content: unknown }).content === 'object';
}

type TransformInput = Parameters<typeof jsonSchemaTransform>[0];

/** jsonSchemaTransform, plus the responses declared per media type. */
export function transformWithContent(input: TransformInput): ReturnType<typeof jsonSchemaTransform> {
  const response = (input.schema as { response?: Record<string, unknown> } | undefined)?.response;
  const byContent = Object.entries(response ?? {}).filter((e): e is [string, ContentResponse] => isContentResponse(e[1]));
  if (byContent.length === 0) return jsonSchemaTransform(input);
  const rest = Object.fromEntries(Object.entries(response ?? {}).filter(([, r]) => !isContentResponse(r)));
  const out = jsonSchemaTransform({ ...input, schema: { ...input.schema, response: rest } } as TransformInput);
  const responses = ((out.schema as { response?: Record<string, unknown> }).response ??= {});
  for (const [status, r] of byContent) {
    const content = Object.fromEntries(
      Object.entries(r.content).map(([mediaType, { schema }]) => [mediaType, { schema: z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) }]),
    );
    responses[status] = { description: r.description, content };
  }
  return out;
}

type Doc = { paths?: Record<string, Record<string, { requestBody?: { required?: boolean; content?: Record<string, { schema?: { anyOf?: { type?: unknown }[] } }> } }>> };

/**
 * @fastify/swagger marks every request body `required: true`; a body whose
 * schema admits null (`.nullish()`: no body at all, e.g. POST …/pin) is not,
 * so the document says so.
 */
export function optionalNullableBodies<T>(doc: T): T {
  for (const ops of Object.values((doc as Doc).paths ?? {})) {
    for (const op of Object.values(ops)) {
      const body = op.requestBody;
      if (body === undefined) continue;
      const nullable = Object.values(body.content ?? {}).some((m) => m.schema?.anyOf?.some((s) => s.type === 'null') === true);
      if (nullable) body.required = false;
    }
  }
  return doc;
}
