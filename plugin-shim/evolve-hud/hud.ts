// The HUD message: found by marker, removed, appended last.

import type { TextPart, ToolPart, ToolStateCompleted, UserMessage } from "@opencode-ai/sdk";

export const HUD_TAG = "<evolve-hud";
export const HUD_ID_PREFIX = "msg_evolvehud_";

export type Json = Record<string, unknown>;
/** A message as a hook gets it, checked field by field before use (other plugins may have changed it). */
export interface Entry {
  info: Json;
  parts: Json[];
}

/**
 * The HUD message, in OpenCode's own types (its SDK's user message and text
 * part), so that a change of their shape fails the type check. Its model is
 * the session's where one is known, and left out where none is.
 */
export interface HudMessage {
  info: Omit<UserMessage, "model"> & Partial<Pick<UserMessage, "model">>;
  parts: TextPart[];
}

export const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A completed tool part as far as it was checked: OpenCode's own types
 * (its SDK's `ToolPart` and `ToolStateCompleted`), narrowed to the fields
 * [`completedTool`] looked at. Its other fields are as they came.
 */
export type CompletedTool = Pick<ToolPart, "type" | "callID"> & {
  state: Pick<ToolStateCompleted, "status" | "output"> & { time?: Partial<ToolStateCompleted["time"]> };
};

/** `p` as a completed tool part with its output, or undefined. */
export function completedTool(p: unknown): CompletedTool | undefined {
  if (!isObject(p) || p.type !== "tool" || typeof p.callID !== "string" || !isObject(p.state)) return undefined;
  const { status, output, time } = p.state;
  if (status !== "completed" || typeof output !== "string") return undefined;
  return {
    type: "tool",
    callID: p.callID,
    state: { status, output, ...(isObject(time) ? { time: time as Partial<ToolStateCompleted["time"]> } : {}) },
  };
}

/** A well-formed `{info, parts}` entry. */
export function isEntry(v: unknown): v is Entry {
  return isObject(v) && isObject(v.info) && Array.isArray(v.parts);
}

/** A HUD entry: our id prefix, and a text part holding the HUD tag. */
export function isHud(v: unknown): boolean {
  return (
    isEntry(v) &&
    typeof v.info.id === "string" &&
    v.info.id.startsWith(HUD_ID_PREFIX) &&
    v.parts.some((p) => isObject(p) && p.type === "text" && typeof p.text === "string" && p.text.includes(HUD_TAG))
  );
}

/** The session the messages belong to: the last `info.sessionID` seen. */
export function sessionOf(messages: unknown[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (isEntry(m) && !isHud(m) && typeof m.info.sessionID === "string" && m.info.sessionID !== "") {
      return m.info.sessionID;
    }
  }
  return undefined;
}

/** Builds the HUD entry: a user message with one synthetic text part. */
export function hudEntry(messages: unknown[], sessionID: string, text: string, now = Date.now()): HudMessage {
  let user: Json | undefined;
  let assistant: Json | undefined;
  for (let i = messages.length - 1; i >= 0 && !user; i--) {
    const m = messages[i];
    if (!isEntry(m) || isHud(m)) continue;
    if (m.info.role === "user") user = m.info;
    else if (m.info.role === "assistant" && !assistant) assistant = m.info;
  }
  const model = modelOf(user?.model) ?? modelOf(assistant);
  const agent = typeof user?.agent === "string" ? user.agent : typeof assistant?.agent === "string" ? assistant.agent : "build";
  const id = `${HUD_ID_PREFIX}${sessionID}`;
  return {
    info: { id, sessionID, role: "user", time: { created: now }, agent, ...(model ? { model } : {}) },
    parts: [{ id: `prt_evolvehud_${sessionID}`, sessionID, messageID: id, type: "text", text, synthetic: true }],
  };
}

/** `{providerID, modelID}` where `v` names both. */
function modelOf(v: unknown): UserMessage["model"] | undefined {
  if (!isObject(v) || typeof v.providerID !== "string" || typeof v.modelID !== "string") return undefined;
  return { providerID: v.providerID, modelID: v.modelID };
}

/**
 * Removes every HUD entry from `messages` in place and appends `hud` last.
 * Nothing else is changed, moved or dropped.
 */
export function swapHud(messages: unknown[], hud: HudMessage): void {
  removeHuds(messages);
  messages.push(hud);
}

/** Removes every HUD entry in place; returns how many went. */
export function removeHuds(messages: unknown[]): number {
  let kept = 0;
  const before = messages.length;
  for (let i = 0; i < before; i++) {
    if (!isHud(messages[i])) messages[kept++] = messages[i];
  }
  messages.length = kept;
  return before - kept;
}
