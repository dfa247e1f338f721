// The part of s3rver 3.7.1's API that embedded.ts uses (the package ships no types).
declare module "s3rver" {
  export default class S3rver {
    constructor(options: {
      address?: string;
      port?: number;
      directory?: string;
      silent?: boolean;
      resetOnClose?: boolean;
      vhostBuckets?: boolean;
      configureBuckets?: { name: string; configs: (string | Buffer)[] }[];
    });
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
  }
}
