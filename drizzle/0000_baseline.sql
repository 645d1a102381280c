CREATE TABLE "api_keys" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"name" text NOT NULL,
	"prefix" text NOT NULL,
	"key_hash" text NOT NULL,
	"scopes" text[] NOT NULL,
	"created_by" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp with time zone,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "memberships" (
	"org_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"role" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "organizations" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"parent_id" uuid,
	"is_demo" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"email" text NOT NULL,
	"name" text,
	"password_hash" text,
	"email_verified" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "billing_imports" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"file_name" text NOT NULL,
	"rows_imported" integer DEFAULT 0 NOT NULL,
	"rows_rejected" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "billing_line_items" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"org_id" uuid NOT NULL,
	"import_id" uuid,
	"provider" text NOT NULL,
	"billing_account_id" text NOT NULL,
	"billing_account_name" text,
	"sub_account_id" text,
	"sub_account_name" text,
	"billing_currency" text DEFAULT 'USD' NOT NULL,
	"billing_period" date NOT NULL,
	"charge_period_start" timestamp with time zone NOT NULL,
	"charge_period_end" timestamp with time zone NOT NULL,
	"charge_category" text NOT NULL,
	"charge_class" text,
	"charge_frequency" text,
	"charge_description" text,
	"billed_cost" numeric(30, 10) NOT NULL,
	"effective_cost" numeric(30, 10) NOT NULL,
	"list_cost" numeric(30, 10),
	"contracted_cost" numeric(30, 10),
	"pricing_category" text,
	"pricing_quantity" numeric(30, 10),
	"pricing_unit" text,
	"consumed_quantity" numeric(30, 10),
	"consumed_unit" text,
	"commitment_discount_id" text,
	"commitment_discount_category" text,
	"commitment_discount_type" text,
	"commitment_discount_status" text,
	"commitment_discount_name" text,
	"commitment_discount_quantity" numeric(30, 10),
	"commitment_discount_unit" text,
	"region_id" text,
	"region_name" text,
	"service_category" text,
	"service_name" text,
	"resource_id" text,
	"resource_type" text,
	"sku_id" text,
	"sku_price_id" text,
	"tags" jsonb,
	"extra" jsonb
);
--> statement-breakpoint
CREATE TABLE "billing_periods" (
	"org_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"month" date NOT NULL,
	"status" text DEFAULT 'open' NOT NULL,
	"closed_at" timestamp with time zone,
	"frozen_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "cloud_accounts" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"account_id" text NOT NULL,
	"name" text,
	"billing_account_id" text,
	"billing_account_name" text,
	"child_org_id" uuid,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "commitments" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"provider_commitment_id" text NOT NULL,
	"name" text,
	"commitment_type" text NOT NULL,
	"category" text,
	"contract_term" text,
	"payment_option" text,
	"offering_class" text,
	"region" text,
	"instance_type" text,
	"instance_family" text,
	"starts_at" timestamp with time zone,
	"ends_at" timestamp with time zone,
	"amount" numeric(30, 10),
	"upfront_cost" numeric(30, 10),
	"recurring_hourly_cost" numeric(30, 10),
	"holding_account_id" text,
	"insured" boolean DEFAULT false NOT NULL,
	"fee_rate" numeric(30, 10),
	"lock_in_ends_at" timestamp with time zone,
	"source" text DEFAULT 'billing' NOT NULL,
	"purchase_id" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "organizations" ADD CONSTRAINT "organizations_parent_id_organizations_id_fk" FOREIGN KEY ("parent_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_imports" ADD CONSTRAINT "billing_imports_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_line_items" ADD CONSTRAINT "billing_line_items_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_line_items" ADD CONSTRAINT "billing_line_items_import_id_billing_imports_id_fk" FOREIGN KEY ("import_id") REFERENCES "public"."billing_imports"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_periods" ADD CONSTRAINT "billing_periods_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "cloud_accounts" ADD CONSTRAINT "cloud_accounts_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "cloud_accounts" ADD CONSTRAINT "cloud_accounts_child_org_id_organizations_id_fk" FOREIGN KEY ("child_org_id") REFERENCES "public"."organizations"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "commitments" ADD CONSTRAINT "commitments_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_hash_uq" ON "api_keys" USING btree ("key_hash");--> statement-breakpoint
CREATE INDEX "api_keys_org_idx" ON "api_keys" USING btree ("org_id");--> statement-breakpoint
CREATE UNIQUE INDEX "memberships_org_user_uq" ON "memberships" USING btree ("org_id","user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "users_email_lower_uq" ON "users" USING btree (lower("email"));--> statement-breakpoint
CREATE INDEX "billing_line_items_org_period_idx" ON "billing_line_items" USING btree ("org_id","billing_period","provider");--> statement-breakpoint
CREATE INDEX "billing_line_items_commitment_idx" ON "billing_line_items" USING btree ("org_id","commitment_discount_id") WHERE "billing_line_items"."commitment_discount_id" IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "billing_periods_pk" ON "billing_periods" USING btree ("org_id","provider","month");--> statement-breakpoint
CREATE UNIQUE INDEX "cloud_accounts_org_provider_account_uq" ON "cloud_accounts" USING btree ("org_id","provider","account_id");--> statement-breakpoint
CREATE UNIQUE INDEX "commitments_org_provider_cid_uq" ON "commitments" USING btree ("org_id","provider","provider_commitment_id");