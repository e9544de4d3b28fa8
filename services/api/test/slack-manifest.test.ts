/** deploy/slack/manifest.yaml matches the API: its URLs are the routes heapcap mounts, its scopes what heapcap calls. */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { REPO_ROOT } from '@heapcap/testkit';
import { USAGE } from '@heapcap/slack';

interface Manifest {
  features: { slash_commands: { command: string; url: string; usage_hint: string; should_escape: boolean }[]; bot_user: { display_name: string } };
  oauth_config: { scopes: { bot: string[] } };
  settings: { interactivity: { is_enabled: boolean; request_url: string } };
}

void test('the Slack app manifest points at /slack/commands and /slack/interactions and asks for the scopes heapcap uses', async () => {
  const m = parse(await readFile(join(REPO_ROOT, 'deploy/slack/manifest.yaml'), 'utf8')) as Manifest;
  const [command] = m.features.slash_commands;
  assert.equal(command?.command, '/heapcap');
  assert.equal(new URL(command.url).pathname, '/slack/commands');
  assert.equal(new URL(command.url).protocol, 'https:', 'Slack only calls HTTPS URLs');
  assert.equal(m.settings.interactivity.is_enabled, true);
  assert.equal(new URL(m.settings.interactivity.request_url).pathname, '/slack/interactions');
  // commands: the slash command; chat:write(.public): results after the response_url window; usergroups:read: group grants.
  assert.deepEqual([...m.oauth_config.scopes.bot].sort(), ['chat:write', 'chat:write.public', 'commands', 'usergroups:read']);
  for (const verb of ['capture', 'status', 'list', 'targets', 'help']) assert.ok(command.usage_hint.includes(verb), `usage hint mentions ${verb}`);
  assert.ok(command.usage_hint.includes(USAGE.capture.replace('capture ', '')), 'the hint shows capture arguments as help does');
});
