/** Where `tidemark dev` listens and keeps its log unless told (its help says so too). */
export const DEV_PORT = 3000;
export const DEV_DATA = '.tidemark';
