// Placeholder replaced by the database template setup of the foundation work.
export default async function setup(): Promise<void> {}
