/** The HEAPCAP_SLACK_* variables and HEAPCAP_PUBLIC_URL: defaults, parsing, and errors that never echo a secret. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, parseConfig } from '../src/index.ts';

void test('defaults: Slack off, API links, the public URL from the listen address', () => {
  const c = parseConfig({});
  assert.deepEqual(c.slack, { signingSecret: undefined, usersFile: undefined, botToken: undefined, apiUrl: 'https://slack.com/api/', links: 'api', linkTtlSeconds: 3600, retryBaseMs: 2000, responseOrigins: ['https://hooks.slack.com', 'https://hooks.slack-gov.com'] });
  assert.equal(c.publicUrl, 'http://127.0.0.1:8080');
  assert.equal(parseConfig({ HEAPCAP_HOST: '0.0.0.0', HEAPCAP_PORT: '9090' }).publicUrl, 'http://127.0.0.1:9090');
  assert.equal(parseConfig({ HEAPCAP_HOST: '::1' }).publicUrl, 'http://[::1]:8080');
  assert.equal(parseConfig({ HEAPCAP_PUBLIC_URL: 'https://heapcap.example/' }).publicUrl, 'https://heapcap.example');
});

void test('every Slack variable lands in config.slack', () => {
  const c = parseConfig({
    HEAPCAP_SLACK_SIGNING_SECRET: '8f742231b10e8888abcd99yyyzzz85a5',
    HEAPCAP_SLACK_USERS_FILE: '/etc/heapcap/slack-users.yaml',
    HEAPCAP_SLACK_BOT_TOKEN: 'xoxb-123-456-abcDEF',
    HEAPCAP_SLACK_API_URL: 'https://slack-gov.com/api/',
    HEAPCAP_SLACK_LINKS: 'presigned',
    HEAPCAP_SLACK_LINK_TTL_SECONDS: '600',
    HEAPCAP_SLACK_RETRY_MS: '500',
    HEAPCAP_SLACK_RESPONSE_HOSTS: 'hooks.slack-gov.com',
  });
  assert.deepEqual(c.slack, {
    signingSecret: '8f742231b10e8888abcd99yyyzzz85a5',
    usersFile: '/etc/heapcap/slack-users.yaml',
    botToken: 'xoxb-123-456-abcDEF',
    apiUrl: 'https://slack-gov.com/api/',
    links: 'presigned',
    linkTtlSeconds: 600,
    retryBaseMs: 500,
    responseOrigins: ['https://hooks.slack-gov.com'],
  });
});

void test('bad values name their variable and never repeat a secret', () => {
  const secretish = 'xoxp-user-token-not-a-bot-0000';
  try {
    parseConfig({ HEAPCAP_SLACK_BOT_TOKEN: secretish, HEAPCAP_SLACK_SIGNING_SECRET: 'short', HEAPCAP_SLACK_LINKS: 'email', HEAPCAP_SLACK_LINK_TTL_SECONDS: '999999999' });
    assert.fail('accepted');
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    assert.deepEqual(err.issues.map((i) => i.variable).sort(), ['HEAPCAP_SLACK_BOT_TOKEN', 'HEAPCAP_SLACK_LINKS', 'HEAPCAP_SLACK_LINK_TTL_SECONDS', 'HEAPCAP_SLACK_SIGNING_SECRET']);
    assert.ok(!err.message.includes(secretish) && !err.message.includes('short'), err.message);
    assert.match(err.message, /HEAPCAP_SLACK_BOT_TOKEN: must be a bot token \(xoxb-…\)/);
  }
});
