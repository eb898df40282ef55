#!/usr/bin/env node
// A tiny MCP server over stdio in plain Node (no dependencies but the
// test's own hangar-greeting, when it is installed): the npm package the
// package runtime tests install. __NAME__, __VERSION__ and __TOOLS__ are
// filled in when the package is made.
'use strict';
const fs = require('fs');
const os = require('os');
const readline = require('readline');

const NAME = '__NAME__';
const VERSION = '__VERSION__';
const TOOLS = __TOOLS__;
let greet = () => 'no greeting';
try { greet = require('hangar-greeting').greet; } catch (e) { /* not a dependency of this one */ }

function toolResult(text) { return { content: [{ type: 'text', text: String(text) }] }; }

function call(name, args) {
  switch (name) {
    case 'env':
      return toolResult(process.env[(args || {}).name] || '');
    case 'whoami': {
      let writable = true;
      // Its own code: owned by its user, so only a read-only root stops this.
      try { fs.writeFileSync(__dirname + '/probe', 'x'); } catch (e) { writable = false; }
      return toolResult(JSON.stringify({ uid: process.getuid(), home: os.homedir(), code_writable: writable, version: VERSION }));
    }
    default:
      return toolResult(`${name} from ${NAME}@${VERSION}: ${greet()} ${JSON.stringify(args || {})}`);
  }
}

const rl = readline.createInterface({ input: process.stdin });
function send(msg) { process.stdout.write(JSON.stringify(msg) + '\n'); }
rl.on('line', (line) => {
  let msg;
  try { msg = JSON.parse(line); } catch (e) { return; }
  if (msg.id === undefined) return; // a notification
  const reply = (result) => send({ jsonrpc: '2.0', id: msg.id, result });
  switch (msg.method) {
    case 'initialize':
      return reply({ protocolVersion: (msg.params && msg.params.protocolVersion) || '2025-11-25',
        capabilities: { tools: {} }, serverInfo: { name: NAME, version: VERSION } });
    case 'ping':
      return reply({});
    case 'tools/list':
      return reply({ tools: TOOLS.map((t) => ({ name: t, description: `${t} of ${NAME}`,
        inputSchema: { type: 'object', properties: { name: { type: 'string' } } } })) });
    case 'tools/call':
      if (!TOOLS.includes(msg.params.name)) {
        return send({ jsonrpc: '2.0', id: msg.id, error: { code: -32602, message: 'unknown tool ' + msg.params.name } });
      }
      return reply(call(msg.params.name, msg.params.arguments));
    default:
      return send({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'method not found' } });
  }
});
rl.on('close', () => process.exit(0));
