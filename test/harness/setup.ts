// vitest setup file: keep the SDK agents' expected console lines out of test output.
import { quietSdkConsole } from './quiet-sdk.ts';

quietSdkConsole();
