// Two turns of the Vercel AI SDK's OpenAI provider (Responses API) against a gateway, as its docs
// show a conversation: generateText, then the first turn's response.messages appended and a new user
// message. `store` is left at its default (true), so the second turn names the first turn's output
// items with item_reference. Run by tests/test_vercel_ai_sdk.py:
//   node two_turns.mjs <base URL ending in /v1> <plain|search> [<base URL for turn 2>]
// With a second base URL, turn 2 goes there (another replica sharing the first one's state store).
// Prints one JSON line: each turn's text and the `input` of the request the SDK sent.
import { createOpenAI } from "@ai-sdk/openai";
import { generateText } from "ai";

const [baseURL, mode, secondURL] = process.argv.slice(2);
if (!baseURL || !["plain", "search"].includes(mode)) {
  console.error("usage: node two_turns.mjs <baseURL> <plain|search> [<baseURL for turn 2>]");
  process.exit(2);
}
const openai = createOpenAI({ baseURL, apiKey: "k" });
const openai2 = secondURL ? createOpenAI({ baseURL: secondURL, apiKey: "k" }) : openai;
// "default" is a searchhub route name; the provider speaks the Responses API
const [model, model2] = [openai("default"), openai2("default")];
const tools = mode === "search" ? { web_search: openai.tools.webSearch({}) } : undefined;
const tools2 = mode === "search" ? { web_search: openai2.tools.webSearch({}) } : undefined;

const inputOf = (result) => {
  const body = result.request.body;
  return (typeof body === "string" ? JSON.parse(body) : body).input;
};

const messages = [{ role: "user", content: mode === "search" ? "What is the latest Rust release?" : "My name is Bob." }];
const first = await generateText({ model, messages, tools, maxRetries: 0 });
messages.push(...first.response.messages);
messages.push({ role: "user", content: mode === "search" ? "And the one before?" : "What is my name?" });
const second = await generateText({ model: model2, messages, tools: tools2, maxRetries: 0 });

console.log(JSON.stringify({
  first: { text: first.text, finishReason: first.finishReason, input: inputOf(first) },
  second: { text: second.text, finishReason: second.finishReason, input: inputOf(second) },
}));
