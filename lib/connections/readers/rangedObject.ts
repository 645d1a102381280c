/**
 * An S3 object as a random-access buffer (hyparquet's AsyncBuffer) over ranged GETs, so a Parquet
 * file is read footer first and then one row group at a time, never whole.
 */
import { GetObjectCommand, type S3Client } from "@aws-sdk/client-s3";

export interface AsyncBuffer {
  byteLength: number;
  slice(start: number, end?: number): Promise<ArrayBuffer>;
}

export function rangedObject(client: S3Client, bucket: string, key: string, size: number): AsyncBuffer {
  return {
    byteLength: size,
    async slice(start, end = size) {
      if (end <= start) return new ArrayBuffer(0);
      const res = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key, Range: `bytes=${start}-${end - 1}` }));
      const bytes = await res.Body!.transformToByteArray();
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    },
  };
}
