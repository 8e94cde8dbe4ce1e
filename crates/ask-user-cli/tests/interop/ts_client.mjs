// The official TypeScript SDK v2 client (`@modelcontextprotocol/client`) against `ask-user mcp`
// over stdio, in the era `--mode` asks for (`auto`: negotiates 2026-07-28 through
// `server/discover`; `legacy`: the 2025 handshake). Its `elicitation/create` handler answers the
// form (the SDK fulfils a 2026-07-28 `input_required` round through the same handler). With
// `--timeout N` the server runs the timed tool with an N-second window; with `--hold yes` the
// handler answers nothing and waits until the server withdraws the form. Prints one JSON line
// per step; exits non-zero on any failure.
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, arg, i, all) => (i % 2 === 0 ? [...pairs, [arg.replace(/^--/, ''), all[i + 1]]] : pairs), []),
);
const say = (step, value) => console.log(JSON.stringify({ step, ...value }));

const client = new Client(
  { name: 'ts-sdk-v2-test', version: '1.0.0' },
  { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: args.mode } },
);
const forms = [];
client.setRequestHandler('elicitation/create', async (request, ctx) => {
  const params = request.params;
  forms.push(params);
  if (args.hold === 'yes') {
    const signal = ctx.mcpReq.signal;
    await new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', resolve)));
    say('withdrawn', { aborted: signal.aborted });
    return { action: 'cancel' };
  }
  const first = Object.keys(params.requestedSchema?.properties ?? {})[0];
  return { action: 'accept', content: { [first]: args.pick } };
});
const transport = new StdioClientTransport({
  command: args.binary,
  args: ['mcp', '--state-dir', args['state-dir'], ...(args.timeout ? ['--mode', 'timed', '--timeout', args.timeout] : [])],
  stderr: 'inherit',
});
await client.connect(transport);
say('connected', { protocolVersion: client.getNegotiatedProtocolVersion() ?? null });
const tools = await client.listTools();
say('tools', { names: tools.tools.map((t) => t.name) });
const result = await client.callTool({
  name: 'ask_user_question',
  arguments: {
    questions: [{ id: 'db', question: 'Which database?', options: [{ label: 'SQLite' }, { label: 'PostgreSQL' }] }],
  },
});
say('called', { text: result.content?.[0]?.text ?? null, isError: result.isError ?? false, forms: forms.length });
await client.close();
