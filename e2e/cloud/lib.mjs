// The cloud clients, each built the way its users build it, pointed at a
// base URL (a fake cloud, or the gateway in front of one), with the fakes'
// test credentials (internal/cloudtest): obvious test values, no real keys.
import AnthropicBedrock from "@anthropic-ai/bedrock-sdk";
import AnthropicVertex from "@anthropic-ai/vertex-sdk";
import OpenAI, { AzureOpenAI } from "openai";
import { createAmazonBedrock } from "@ai-sdk/amazon-bedrock";
import { GoogleGenAI } from "@google/genai";
import { OAuth2Client } from "google-auth-library";

// The credentials the fakes accept (internal/cloudtest: TestAccessKeyID,
// TestSecretAccessKey, TestBedrockAPIKey, TestAzureAPIKey,
// TestAzureEntraToken): AWS's documented example keys and made-up tokens.
export const AWS_ACCESS_KEY_ID = "AKIAIOSFODNN7EXAMPLE";
export const AWS_SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
export const BEDROCK_API_KEY = "ABSKY2xvdWR0ZXN0LW5vdC1hLXJlYWwta2V5";
export const AZURE_API_KEY = "0123456789abcdef0123456789abcdef";
export const AZURE_ENTRA_TOKEN =
  "eyJ0eXAiOiJKV1QiLCJhbGciOiJub25lIn0.eyJhdWQiOiJodHRwczovL2NvZ25pdGl2ZXNlcnZpY2VzLmF6dXJlLmNvbSJ9.cloudtest";
export const AZURE_API_VERSION = "2025-04-01-preview";
export const AZURE_DEPLOYMENT = "gpt-4.1";
export const REGION = "us-east-1";
export const VERTEX_PROJECT = "cloudtest-project";
export const VERTEX_REGION = "us-east5";

// bedrockClients are AnthropicBedrock with each way of authenticating:
// SigV4 with AWS keys, a Bedrock API key (Bearer), and none (skipAuth).
export function bedrockClients(baseURL) {
  const common = { baseURL, awsRegion: REGION, maxRetries: 0 };
  return {
    sigv4: new AnthropicBedrock({ ...common, awsAccessKey: AWS_ACCESS_KEY_ID, awsSecretKey: AWS_SECRET_ACCESS_KEY }),
    apikey: new AnthropicBedrock({ ...common, apiKey: BEDROCK_API_KEY }),
    skipauth: new AnthropicBedrock({ ...common, skipAuth: true }),
  };
}

// googleToken is a Google auth client holding a fixed access token, as a
// client is given one it got elsewhere: the Node Google auth library sends
// a service account's grant to Google's own token endpoint, whatever the
// key file's token_uri says, so tests hand over a token the fake issued.
export function googleToken(token) {
  const auth = new OAuth2Client();
  auth.setCredentials({ access_token: token });
  return auth;
}

// vertexClients is AnthropicVertex with a fixed access token.
export function vertexClients(baseURL, token) {
  return {
    token: new AnthropicVertex({ baseURL: `${baseURL}/v1`, region: VERTEX_REGION, projectId: VERTEX_PROJECT, authClient: googleToken(token), maxRetries: 0 }),
  };
}

// azureClients are the openai package's AzureOpenAI with an API key and
// with an Entra ID token provider, and the plain OpenAI client on the
// resource's /openai/v1/ with the key in api-key, as Microsoft documents.
export function azureClients(endpoint) {
  const common = { endpoint, apiVersion: AZURE_API_VERSION, maxRetries: 0 };
  return {
    apikey: { client: new AzureOpenAI({ ...common, apiKey: AZURE_API_KEY, deployment: AZURE_DEPLOYMENT }), model: AZURE_DEPLOYMENT },
    entra: {
      client: new AzureOpenAI({ ...common, azureADTokenProvider: async () => AZURE_ENTRA_TOKEN, deployment: AZURE_DEPLOYMENT }),
      model: AZURE_DEPLOYMENT,
    },
    "apikey-nodeployment": { client: new AzureOpenAI({ ...common, apiKey: AZURE_API_KEY }), model: AZURE_DEPLOYMENT },
    v1: {
      client: new OpenAI({ baseURL: `${endpoint}/openai/v1`, apiKey: AZURE_API_KEY, defaultHeaders: { "api-key": AZURE_API_KEY }, maxRetries: 0 }),
      model: AZURE_DEPLOYMENT,
    },
  };
}

// aiSdkClients are the AI SDK's Bedrock provider with a Bedrock API key and
// with AWS keys (SigV4).
export function aiSdkClients(baseURL) {
  return {
    apikey: createAmazonBedrock({ baseURL, region: REGION, apiKey: BEDROCK_API_KEY }),
    sigv4: createAmazonBedrock({ baseURL, region: REGION, accessKeyId: AWS_ACCESS_KEY_ID, secretAccessKey: AWS_SECRET_ACCESS_KEY }),
  };
}

// genaiClients is Google's Gen AI SDK on Vertex AI: with a fixed access
// token in a project and location, and in express mode, with the same
// string as its API key and neither.
export function genaiClients(baseUrl, token) {
  return {
    token: new GoogleGenAI({
      vertexai: true,
      project: VERTEX_PROJECT,
      location: VERTEX_REGION,
      httpOptions: { baseUrl },
      googleAuthOptions: { authClient: googleToken(token) },
    }),
    express: new GoogleGenAI({ vertexai: true, apiKey: token, httpOptions: { baseUrl } }),
  };
}

// throughGateway are the clients as a focusgate user configures them: the
// base URL is the gateway's, the client holds no cloud credential, and the
// gateway key (GATEWAY_KEY, a key of the gateway's
// FOCUSGATE_CLIENT_KEYS_FILE) stands where the credential would: the
// gateway signs or authorizes upstream with its own. (AnthropicVertex and
// GoogleGenAI take it as their access token: vertexClients and
// genaiClients with the key for a token.)
export const throughGateway = {
  // AnthropicBedrock: no SigV4 (skipAuth), the key as a bearer token.
  bedrock: (baseURL) =>
    new AnthropicBedrock({ baseURL, awsRegion: REGION, maxRetries: 0, skipAuth: true, defaultHeaders: { Authorization: `Bearer ${gatewayKey()}` } }),
  // The AI SDK's Bedrock provider: the key as its API key (a bearer token).
  aiSdkBedrock: (baseURL) => createAmazonBedrock({ baseURL, region: REGION, apiKey: gatewayKey() }),
  // AzureOpenAI: the key as its API key (the api-key header).
  azure: (endpoint) => ({
    client: new AzureOpenAI({ endpoint, apiVersion: AZURE_API_VERSION, deployment: AZURE_DEPLOYMENT, apiKey: gatewayKey(), maxRetries: 0 }),
    model: AZURE_DEPLOYMENT,
  }),
  // OpenAI on the resource's /openai/v1/: the key as its API key (a bearer
  // token) and in api-key, as Microsoft documents for a key.
  azureV1: (endpoint) => ({
    client: new OpenAI({ baseURL: `${endpoint}/openai/v1`, apiKey: gatewayKey(), defaultHeaders: { "api-key": gatewayKey() }, maxRetries: 0 }),
    model: AZURE_DEPLOYMENT,
  }),
};

function gatewayKey() {
  const key = process.env.GATEWAY_KEY;
  if (!key) throw new Error("GATEWAY_KEY is not set: a client goes through focusgate with a gateway key");
  return key;
}
