// The anchor of `benches/waiting.rs`: the official MCP TypeScript SDK server over streamable
// HTTP (one transport per session, as the SDK's own example does), one tool whose calls wait for
// an answer that never comes. Prints `listening PORT` once it serves.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const transports = new Map();

function newServer() {
  const server = new McpServer({ name: 'waiting-anchor', version: '1.0.0' });
  server.registerTool(
    'ask_user_question',
    { description: 'Asks the person.', inputSchema: { questions: z.array(z.any()) } },
    () => new Promise(() => {}),
  );
  return server;
}

async function body(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
}

const httpServer = http.createServer(async (req, res) => {
  const id = req.headers['mcp-session-id'];
  if (req.method === 'POST') {
    const message = await body(req);
    let transport = id ? transports.get(id) : undefined;
    if (!transport && isInitializeRequest(message)) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => transports.set(sid, transport),
      });
      transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
      await newServer().connect(transport);
    }
    if (!transport) {
      res.writeHead(400).end();
      return;
    }
    await transport.handleRequest(req, res, message);
  } else if (id && transports.has(id)) {
    await transports.get(id).handleRequest(req, res);
  } else {
    res.writeHead(400).end();
  }
});
httpServer.listen(0, '127.0.0.1', () => console.log(`listening ${httpServer.address().port}`));
